"""The peer's records, made in its own virtual environment: ``python -m bench.dot.seed TOKENS REFRESH OUT``.

One user, a public application (the code flow and refresh, consent skipped as
ours skips it), a confidential one for client credentials (its secret not
hashed: the toolkit's default is PBKDF2, ours is a SHA-256 digest, so an
unhashed compare is the comparable one), TOKENS live access tokens for the
protected resource and REFRESH refresh tokens, and the user's session cookie.
Writes them as JSON to OUT (bench/peers.py reads it).
"""

import json
import os
import secrets
import sys
from datetime import timedelta
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.dot.settings")
django.setup()

from django.conf import settings  # noqa: E402 - after django.setup()
from django.contrib.auth import get_user_model  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402
from oauth2_provider.models import (  # noqa: E402
    get_access_token_model,
    get_application_model,
    get_refresh_token_model,
)

REDIRECT_URI = "http://127.0.0.1/callback"
BATCH = 2000


def main(tokens: int, refresh: int, out: Path) -> None:
    application_model, access_model, refresh_model = (
        get_application_model(),
        get_access_token_model(),
        get_refresh_token_model(),
    )
    user = get_user_model().objects.create_user("bench")
    public = application_model.objects.create(
        name="bench",
        user=user,
        client_type=application_model.CLIENT_PUBLIC,
        authorization_grant_type=application_model.GRANT_AUTHORIZATION_CODE,
        redirect_uris=REDIRECT_URI,
        skip_authorization=True,
        hash_client_secret=False,
    )
    secret = secrets.token_urlsafe(32)
    machine = application_model.objects.create(
        name="bench machine",
        user=user,
        client_type=application_model.CLIENT_CONFIDENTIAL,
        authorization_grant_type=application_model.GRANT_CLIENT_CREDENTIALS,
        client_secret=secret,
        hash_client_secret=False,
    )
    expires, scope = timezone.now() + timedelta(days=7), "public"

    def access_tokens(count: int) -> list:
        made = [
            access_model(user=user, application=public, token=secrets.token_urlsafe(32), expires=expires, scope=scope)
            for _ in range(count)
        ]
        return access_model.objects.bulk_create(made, batch_size=BATCH)

    inspect = [t.token for t in access_tokens(tokens)]
    pairs = [
        refresh_model(user=user, application=public, token=secrets.token_urlsafe(32), access_token=access)
        for access in access_tokens(refresh)
    ]
    refresh_model.objects.bulk_create(pairs, batch_size=BATCH)
    client = Client()
    client.force_login(user)
    cookie = settings.SESSION_COOKIE_NAME
    out.write_text(
        json.dumps(
            {
                "client_id": public.client_id,
                "machine_client_id": machine.client_id,
                "machine_client_secret": secret,
                "session_cookie": f"{cookie}={client.cookies[cookie].value}",
                "inspect_tokens": inspect,
                "refresh_tokens": [p.token for p in pairs],
            }
        )
    )


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
