"""Webhooks: a domain's endpoints, subscribed to event types (docs/events.md), and their dead letters."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from authsvc.admin.schemas.answers import EPOCH, Answer
from authsvc.admin.schemas.base import Schema
from authsvc.admin.schemas.types import Omissible, Text
from authsvc.core import validation
from authsvc.webhooks.events import TYPES

EVENTS_DESCRIPTION = "Event types to deliver (docs/events.md): " + ", ".join(f"`{t}`" for t in TYPES) + "."


def _event_types(values: list[str]) -> list[str]:
    unknown = [value for value in values if value not in TYPES]
    if unknown:
        raise ValueError(f"unknown event type {unknown[0]!r}; one of {', '.join(TYPES)}")
    if not values:
        raise ValueError("must not be empty")
    return list(dict.fromkeys(values))


EventTypes = Annotated[list[Annotated[str, Text(40)]], AfterValidator(_event_types), Field(max_length=len(TYPES) * 2)]
URL_DESCRIPTION = (
    "Where each event is POSTed: https to a public address (plain http on loopback and private addresses only "
    "with the operator's AUTHSVC_BACKCHANNEL_ALLOW_PRIVATE_NETWORKS)."
)
WebhookUrl = Annotated[str, Text(2000, min_length=1, rule=validation.backchannel_logout_uri)]


class WebhookCreate(Schema):
    """A URL subscribed to event types; its signing secret is in the answer, once."""

    url: Annotated[WebhookUrl, Field(description=URL_DESCRIPTION)]
    events: Annotated[EventTypes, Field(description=EVENTS_DESCRIPTION)]


class WebhookChange(Schema):
    url: Omissible[Annotated[WebhookUrl, Field(description=URL_DESCRIPTION)]] = None
    events: Omissible[Annotated[EventTypes, Field(description=EVENTS_DESCRIPTION)]] = None
    enabled: Omissible[bool] = None


# Answers


class Webhook(Answer):
    id: str = Field(description="Hexadecimal.")
    domain: str
    url: str
    events: list[str]
    enabled: bool = Field(description="A disabled endpoint gets no events, nor those queued for it.")
    created_at: int = Field(description=EPOCH)
    previous_secret_until: int | None = Field(
        description=f"{EPOCH} After a rotation: until when the previous secret signs too."
    )


class CreatedWebhook(Webhook):
    secret: str = Field(description="The signing secret (`whsec_...`), shown only now.")


class RotatedWebhookSecret(Webhook):
    secret: str = Field(
        description="The new signing secret, shown only now; the previous one signs too until `previous_secret_until`."
    )


class WebhookList(Answer):
    items: list[Webhook] = Field(description="The domain's webhooks, oldest first.")


class DeadLetter(Answer):
    id: str = Field(description="The delivery's id: replay it with it.")
    webhook: str = Field(description="The endpoint's id.")
    type: str = Field(description="The event's type.")
    webhook_id: str = Field(description="The event's `webhook-id` (the same when replayed).")
    attempts: int
    last_error: str | None = Field(description="Why the last try failed (a status, or the failure's name).")
    created_at: int = Field(description="When the event was queued, milliseconds since the epoch.")
    given_up_at: int = Field(description="Milliseconds since the epoch.")


class DeadLetterList(Answer):
    items: list[DeadLetter] = Field(
        description="Deliveries given up after AUTHSVC_WEBHOOK_GIVE_UP, oldest first; kept a week."
    )


class Replayed(Answer):
    replayed: str = Field(description="The delivery's id: it is tried again from now.")
