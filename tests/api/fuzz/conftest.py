"""Fixtures of the hostile input and OpenAPI tests: a client with credentials for every surface, the document."""

from __future__ import annotations

from tests.helpers import hostile_input, openapi_document

hostile_client = hostile_input.hostile_client
document = openapi_document.document
