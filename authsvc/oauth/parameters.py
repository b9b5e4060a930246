"""Reading an OAuth request's parameters: query string, form and JSON merged, each sent at most once."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749 import InsecureTransportError, InvalidRequestError, OAuth2Payload, OAuth2Request
from flask import request as flask_request

from authsvc.api.proofs import Proof
from authsvc.core import validation
from authsvc.core.request_state import part
from authsvc.tokens.issue import Lineage

# Clients send the code exchange in the query string (docs/platform.md#code-exchange), so these
# may come from there; credentials never may (they would land in access logs).
QUERY_PARAMETERS = {"grant_type", "code", "client_id", "redirect_uri", "code_verifier", "scope", "refresh_token"}
# A token to revoke or introspect is a secret too.
SECRET_PARAMETERS = {"client_secret", "password", "token"}
# Values that Authlib may quote in an error description, which RFC 6749
# limits to %x20-21 / %x23-5B / %x5D-7E.
_QUOTED_PARAMETERS = {"response_type", "grant_type", "redirect_uri", "client_id", "code_challenge_method"}
# RFC 8707 2: a request may name several resources, one ``resource`` parameter each.
REPEATABLE_PARAMETERS = {"resource"}
# A request's parameters as a pushed request or a request object gives them: a repeatable one as a list.
Parameters = dict[str, str | list[str]]
# An e-mail address may have non-ASCII characters (login_hint prefills the sign-in page with one).
_FREE_TEXT_PARAMETERS = {"username", "password", "login_hint"}


def _quoted(name: str) -> str:
    """A parameter's name for an error description, which allows only some ASCII.

    Names are the client's input too: one that could not be quoted would turn
    a 400 into a failure to render the error.
    """
    if 0 < len(name) <= 40 and all(0x20 <= ord(c) <= 0x7E and c not in "\"\\'" for c in name):
        return f"'{name}'"
    return "A parameter"


# What each kind of value may hold, as patterns compiled once: one match per value, not a call per character.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f]")  # a control character other than the tab
_PRINTABLE = re.compile(r"[\x20-\x7e]*")  # printable ASCII
_PRINTABLE_UNQUOTED = re.compile(r"[\x20-\x21\x23-\x5b\x5d-\x7e]*")  # printable ASCII but " and \


def check_value(name: str, value: str) -> None:
    """Refuse a parameter value with characters its kind does not allow (RFC 6749 error descriptions quote some)."""
    if name in _FREE_TEXT_PARAMETERS:
        if _CONTROL.search(value):
            raise InvalidRequestError(f"{_quoted(name)} contains control characters.")
        return
    allowed = _PRINTABLE_UNQUOTED if name in _QUOTED_PARAMETERS else _PRINTABLE
    if not allowed.fullmatch(value):
        raise InvalidRequestError(f"{_quoted(name)} contains characters that are not allowed.")


@dataclass
class ParametersRead:
    """The request's parameters once read, or why they could not be (authsvc.core.request_state.part).

    The request rates read them before the view (``parameter``), by the same rules: one parse serves both.
    """

    read: dict[str, list[str]] | InvalidRequestError | None = None


def read_parameters() -> dict[str, list[str]]:
    """Merge the query string, a form body and a JSON body into one parameter set (read once per request).

    RFC 6749 3.1: no parameter may be sent more than once, across all three.
    At the token endpoint only QUERY_PARAMETERS are read from the query string.
    """
    noted = part(ParametersRead)
    read = noted.read
    if read is None:
        try:
            read = _read_parameters()
        except InvalidRequestError as exc:
            read = exc
        noted.read = read
    if isinstance(read, InvalidRequestError):
        raise read
    return read


def parameter(name: str) -> str | None:
    """A parameter of an OAuth request as its endpoint reads it, or None if absent or if the request is refused.

    For the request rates (authsvc.core.policy.rate_limited), which run before the view and must
    never fail on input the view will refuse.
    """
    try:
        values = read_parameters()
    except Exception:  # noqa: BLE001 - malformed input is the view's to refuse
        return None
    items = values.get(name)
    return items[0] if items else None


def _read_parameters() -> dict[str, list[str]]:
    values: dict[str, list[str]] = defaultdict(list)
    query_limited = flask_request.endpoint == "oauth.token"
    if flask_request.endpoint == "oauth.par" and flask_request.args:
        # RFC 9126 2.1: the pushed request is the form body; a query would be read by nobody, or logged.
        raise InvalidRequestError("A pushed authorization request carries its parameters in the body, not the query.")
    for name in flask_request.args:
        if name in SECRET_PARAMETERS:
            raise InvalidRequestError(f"{_quoted(name)} must not be sent in the query string.")
        if name in QUERY_PARAMETERS or not query_limited:
            values[name].extend(flask_request.args.getlist(name))
    if flask_request.mimetype == "application/json":
        _read_json_body(values)
    else:
        for name in flask_request.form:
            values[name].extend(flask_request.form.getlist(name))
    for name, items in values.items():
        if len(items) > 1 and name not in REPEATABLE_PARAMETERS:
            raise InvalidRequestError(f"{_quoted(name)} is sent more than once.")
        for item in items:
            check_value(name, item)
    return values


def _read_json_body(values: dict[str, list[str]]) -> None:
    """A JSON body's members into ``values``: strings only, null as missing."""
    try:
        body = validation.json_object(flask_request.get_data(cache=True))
    except validation.Invalid as exc:
        raise InvalidRequestError(str(exc)) from None
    for name, value in body.items():
        if value is None:  # null is missing (validation.json_body)
            continue
        if name in REPEATABLE_PARAMETERS and isinstance(value, list):
            # Each value as if sent once more (RFC 8707 2); an empty list names none and is no value at all.
            if not value or not all(isinstance(v, str) for v in value):
                raise InvalidRequestError(f"{_quoted(name)} must be a string or a non-empty list of strings.")
            values[name].extend(value)
            continue
        if not isinstance(value, str):
            raise InvalidRequestError(f"{_quoted(name)} must be a string.")
        values[name].append(value)


class MergedPayload(OAuth2Payload):
    def __init__(self, datalist: dict[str, list[str]]):
        self._datalist = datalist

    @cached_property
    def data(self) -> dict[str, str]:
        return {name: items[0] for name, items in self._datalist.items()}

    @property
    def datalist(self) -> dict[str, list[str]]:
        return self._datalist


def _request_hostname() -> str:
    """The request's host name, without port or IPv6 brackets ("" when the Host header is not one)."""
    try:
        return urlsplit(f"//{flask_request.host}").hostname or ""
    except ValueError:
        return ""


@dataclass
class GrantState:
    """What the endpoints and grants decide about the request as they go, for what they do next: the token's
    issue (authsvc.oauth.server), the code's record, the answer's error handler. One a request: ``grant_state()``.
    """

    # Set by the code and refresh grants: what ties the tokens they issue to the grant before them.
    lineage: Lineage = field(default_factory=Lineage)
    # The token endpoint's and PAR's checked DPoP proof (authsvc.oauth.dpop), None without one.
    dpop: Proof | None = None
    # The pushed request (RFC 9126) the authorisation request opened: spent with the code, or with an error
    # answered to the client.
    pushed_request_uri: str | None = None
    # RFC 8707: the resources the grant allows (None: the application's list; at an authorisation
    # request, those it names) and those the access token is for (None: the domain, as without them).
    resources: list[str] | None = None
    audience: list[str] | None = None
    # The domain's registered resources and their scopes (authsvc.oauth.resources.registered), read when needed.
    registered_resources: dict[str, list[str]] | None = None
    # The grant adds an ID token to a response whose granted scope names openid (set by its OpenID Connect
    # extension, authsvc.oauth.server): the signing key is read before the token's write.
    id_token_follows: bool = False
    # RFC 8693: the exchanged token's actor (``act``, carried by its refreshes), and whether the access token must
    # be a JWT whatever the client's format (requested_token_type jwt).
    act: dict[str, Any] | None = None
    jwt_access_token: bool = False


def grant_state() -> GrantState:
    """The request's ``GrantState`` (authsvc.core.request_state.part)."""
    return part(GrantState)


class MergedRequest(OAuth2Request):
    """An OAuth2Request whose payload merges query string, form and JSON."""

    def __init__(self, params: Parameters | None = None) -> None:
        # OAuth 2.0 needs TLS, except to this machine (RFC 6749 3.1, RFC 8252 7.3). The service's own
        # rule decides what "this machine" is (validation.is_loopback: *.localhost too, RFC 6761 6.3);
        # Authlib's check, run on the URI given here, knows only localhost and loopback addresses,
        # so it is given the origin as https once the rule has allowed it. The full URL (an IRI,
        # some 200 calls to build) is made only if something reads ``uri``.
        if flask_request.scheme != "https" and not validation.is_loopback(_request_hostname()):
            raise InsecureTransportError()
        super().__init__(flask_request.method, f"https://{flask_request.host}/", headers=flask_request.headers)
        self.payload = MergedPayload(read_parameters())
        if params is not None:
            self.replace_parameters(params)

    @property
    def uri(self) -> str:
        return flask_request.url

    @uri.setter
    def uri(self, value: str) -> None:
        # Authlib's __init__ sets it to what it checked; the property answers with the request's URL.
        return None

    def replace_parameters(self, params: Parameters) -> None:
        """Read ``params`` instead of what the request sent: a pushed request's, a request object's.

        A list is a repeatable parameter's values (``resource``, RFC 8707 2), each kept.
        """
        self.payload = MergedPayload(
            {name: list(value) if isinstance(value, list) else [value] for name, value in params.items()}
        )

    @property
    def requested_resources(self) -> list[str]:
        """Every ``resource`` parameter of the request (RFC 8707 2), in order."""
        return list(self.payload.datalist.get("resource", []))

    @property
    def args(self) -> dict[str, str]:
        return self.payload.data

    @property
    def form(self) -> dict[str, str]:
        return self.payload.data
