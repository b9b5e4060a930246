"""The JSON a client signs (request objects, client assertions, DPoP proofs): stricter than JSON's parsers.

A member named twice may read as one value here and another to whoever else reads the token, and
NaN or Infinity are not JSON though Python reads them (an ``exp`` of NaN would never expire). The
rules live here once; authsvc.core.validation holds the rules of every other input.
"""

from __future__ import annotations

import base64
import json
from typing import Any


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    members = dict(pairs)
    if len(members) != len(pairs):
        raise ValueError("a member name appears more than once")
    return members


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if number in (float("inf"), float("-inf")):  # 1e400: a literal too large for a float
        raise ValueError(f"{text} is too large a number")
    return number


class SignedJSONDecoder(json.JSONDecoder):
    """JSON as a signed token's header and claims must be: each member name once, every number finite.

    For what a client signs: request objects, client assertions, DPoP proofs (joserfc's
    ``decoder_cls``, or ``signed_json``). A member named twice may read as one value here and
    another to whoever else reads the token (RFC 7515 5.2 and RFC 7519 4 let a parser refuse it, and
    we do); NaN and Infinity are not JSON (RFC 8259 6) though Python reads them, and an ``exp`` of
    NaN compares false with every moment: it would never expire. Refused with a ValueError.
    """

    def __init__(self, **options: Any) -> None:
        super().__init__(**options, object_pairs_hook=_unique_members, parse_constant=_no_constant, parse_float=_finite)


def signed_json(data: bytes | str) -> Any:
    """``data`` read by SignedJSONDecoder; ValueError (RecursionError when nested too deeply) when it is refused."""
    return json.loads(data, cls=SignedJSONDecoder)


def jose_header(compact: str) -> Any:
    """The protected header of a JWS in compact form (RFC 7515 7.1), read by SignedJSONDecoder.

    JOSE libraries read the header with a parser of their own, which keeps the last of two members
    of one name: read here too, so that the header is held to the claims' rules. ValueError when
    refused (a segment that is not base64url or not JSON as well).
    """
    segment = compact.split(".", 1)[0]
    return signed_json(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
