"""The names audit records give who acted and what was acted on.

One spelling for each kind, so that audit queries and subscribers on the
events channel can rely on it: ``user:<id>``, ``client:<client_id>``,
``api_key:<id>``, ``trusted_issuer:<id>``.
"""

from __future__ import annotations


def of_user(user_id: int | str) -> str:
    """The actor or target name of the user with id ``user_id``."""
    return f"user:{user_id}"


def of_client(client_id: str) -> str:
    """The actor or target name of the OAuth client ``client_id``."""
    return f"client:{client_id}"


def of_api_key(key_id: str) -> str:
    """The actor name of the API key ``key_id`` (its public id, never the secret)."""
    return f"api_key:{key_id}"


def of_trusted_issuer(issuer_id: int | str) -> str:
    """The actor name of a domain's trusted issuer (its record's id): what its ID-JAGs did, such as create a user."""
    return f"trusted_issuer:{issuer_id}"
