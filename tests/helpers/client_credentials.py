"""The client credentials grant for the tests: HTTP Basic credentials, an application bound to a service account."""

from __future__ import annotations

import base64


def basic(client_id: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()


def bound_app(world, setup, **fields):
    return world.application(
        setup.domain, confidential=True, service_account_id=setup.service.id, redirect_uris=[], **fields
    )
