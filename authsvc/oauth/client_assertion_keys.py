"""private_key_jwt: applications that authenticate with a JWT signed by their own key (RFC 7523 2.2, OIDC Core 9).

Authlib's JWTBearerClientAssertion does the protocol; authsvc.oauth.private_key_jwt
(loaded at the first assertion) adds the audiences, the single use of each ``jti``,
and the rules on top: asymmetric algorithms only, ``exp`` required and at most
AUTHSVC_CLIENT_ASSERTION_MAX_LIFETIME ahead. This module supplies the
application's keys: its inline JWKS, or its jwks_uri fetched under
authsvc.core.outbound's rules and kept in Redis for every worker.

A jwks_uri that cannot be fetched (down, hanging past the timeout, refused by
the destination rules, not a JWKS) is ``invalid_client``: RFC 6749 5.2 has no
"try later" error for the token endpoint, and the fault lies with the client's
own key server, not with this service.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, cast

from authlib.oauth2.rfc6749 import InvalidClientError

from authsvc.core import store
from authsvc.core.models import Application
from authsvc.core.settings import settings
from authsvc.oauth import client_authentication

if TYPE_CHECKING:
    from joserfc.jwk import Key, KeySet, KeySetSerialization

log = logging.getLogger(__name__)

ALGORITHMS = client_authentication.CLIENT_ASSERTION_ALGORITHMS
# Clock skew allowed on exp, nbf and iat.
LEEWAY = 30
_CURVES = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}


def client_key(client: Application, kid: str | None, alg: str) -> Key:
    """The application's key for ``kid`` and ``alg``; its jwks_uri is refetched once when none matches."""
    key = _pick(_key_set(client), kid, alg)
    if key is None and client.jwks_uri:
        fresh = _refetched_key_set(client)
        key = _pick(fresh, kid, alg) if fresh is not None else None
    if key is None:
        raise InvalidClientError(description="No key of the application matches the assertion's kid and alg.")
    return key


def _pick(keys: KeySet, kid: str | None, alg: str) -> Key | None:
    fitting = [
        key
        for key in keys.keys
        if key.key_type == ("EC" if alg.startswith("ES") else "RSA")
        and (not alg.startswith("ES") or key.get("crv") == _CURVES[alg])
        and key.get("alg", alg) == alg
        and (kid is None or key.kid == kid)
    ]
    # Without a kid, only an unambiguous key will do.
    return fitting[0] if len(fitting) == 1 else None


def _owner(client: Application) -> str:
    return f"application-{client.id}"


def _key_set(client: Application) -> KeySet:
    from joserfc.jwk import KeySet

    if client.jwks is not None:
        return KeySet.import_key_set(cast("KeySetSerialization", client.jwks))
    # An application with private_key_jwt has a JWKS or a jwks_uri (authsvc.oauth.client_authentication).
    uri = cast(str, client.jwks_uri)
    document = store.load_jwks(_owner(client), uri)
    if document is None:
        document = fetch_jwks(uri)
        store.save_jwks(_owner(client), uri, document, settings().client_jwks_ttl)
    return KeySet.import_key_set(cast("KeySetSerialization", document))


def _refetched_key_set(client: Application) -> KeySet | None:
    """The jwks_uri's keys fetched anew, or None when another assertion just did that.

    One refetch per application per interval (a claim in Redis): assertions
    with made-up kids cannot make this service hammer the client's key server.
    """
    if not store.claim_jwks_refetch(_owner(client), settings().client_jwks_refetch_interval):
        return None
    log.info("application %s: unknown key in a client assertion, refetching its JWKS", client.id)
    uri = cast(str, client.jwks_uri)  # only a client with a jwks_uri refetches
    document = fetch_jwks(uri)
    store.save_jwks(_owner(client), uri, document, settings().client_jwks_ttl)
    from joserfc.jwk import KeySet

    return KeySet.import_key_set(cast("KeySetSerialization", document))


def fetch_jwks(url: str) -> dict:
    """The JWKS at ``url``, checked as at registration; InvalidClientError when it cannot be had.

    Bounded: the outbound deadline on the whole exchange, and a body no larger
    than a registered JWKS.
    """
    # Imported here, as in authsvc.sso: requests costs every web worker memory.
    import requests

    from authsvc.core import outbound

    config = settings()
    try:
        with outbound.guard(
            None,
            allow_private=config.client_jwks_allow_private_networks,
            seconds=config.outbound_deadline,
            max_bytes=client_authentication.JWKS_MAX_BYTES,
        ) as session:
            accept = {"Accept": "application/json"}
            response = session.get(url, timeout=config.client_jwks_timeout, headers=accept)
            response.raise_for_status()
            body = response.content
    except requests.RequestException as exc:
        # The URL is the client's own registration, not a secret; the reason helps its operator.
        log.warning("client jwks_uri %s could not be fetched: %s", url, type(exc).__name__)
        why = "refused by the destination rules" if outbound.refused(exc) else "unreachable, slow or failing"
        if isinstance(exc, outbound.TooLarge):
            why = f"larger than {client_authentication.JWKS_MAX_BYTES} bytes"
        raise InvalidClientError(description=f"The application's jwks_uri could not be fetched ({why}).") from None
    try:
        return client_authentication.client_jwks(json.loads(body))
    except RecursionError:
        raise InvalidClientError(description="The application's jwks_uri does not serve a usable JWKS.") from None
    except ValueError as exc:
        raise InvalidClientError(
            description=f"The application's jwks_uri does not serve a usable JWKS: {exc}"
        ) from None
