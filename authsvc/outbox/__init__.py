"""Work that must happen after a change commits, and must not be lost: rows of one SQL table.

A change queues its item (``queue``) in its own transaction, so that the item
exists exactly when the change does. Senders (``authsvc.outbox.sender``), one a
process, claim items in batches with a lease (``authsvc.outbox.claims``), hand
each to the handler of its ``kind`` and record the result: done, tried again
after a growing wait, or given up (audited). Two senders never hold the same
item, so an item is handled once; items of one ordering key are handled one at
a time, in order. E-mail is a kind (``authsvc.mail``), webhook deliveries another
(``authsvc.webhooks``); anything else that must leave the service reliably is a
new kind with its own handler and retries.
"""

from authsvc.outbox.models import OutboxItem, queue

__all__ = ["OutboxItem", "queue"]
