"""What the admin writes accept, declared once (pydantic) for the API, the console and the command line.

One module per resource. ``read(schema, data)`` checks a parsed JSON body
against a schema and reports every problem as ``{field: message}``; the
service functions in ``authsvc.admin`` then apply the rules that need the
database or the actor. ``python -m authsvc.admin.openapi`` writes the admin
request bodies of the OpenAPI document from these schemas.
"""

from authsvc.admin.schemas.base import Schema, read, target_domain

__all__ = ["Schema", "read", "target_domain"]
