"""OpenID Connect's authentication request parameters (Core 3.1.2.1): what a request asks of the sign-in.

``prompt``, ``max_age``, ``login_hint`` and ``id_token_hint`` are honoured on
every authorisation request (OpenID Connect defines them; a plain OAuth client
may send them too). Request objects and pushed requests are read before
(authsvc.oauth.pushed); a ``request_uri`` to fetch is refused.
The parameters are read in a hook that runs once the client and its redirect
URI are valid, so that Authlib sends what is wrong back to the client by
redirect, with ``state`` (Core 3.1.2.6).

A sign-in this module asks for must not be asked for again when the browser
comes back: the sign-in page returns to the same request with a signed note
of when the sign-in was asked for, and a session started after that satisfies
``prompt=login``, ``max_age`` and a differing ``id_token_hint`` once. The note
names the request it was made for (a digest of its query) and is spent by the
request's answer, a code or an error (``spend_sign_in_note``): it stands for no
other request, of this application or another, and for this one only once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from authlib.oauth2.rfc6749 import InvalidRequestError, OAuth2Error
from flask import request
from itsdangerous import BadData, URLSafeTimedSerializer

from authsvc.auth.mfa import factors
from authsvc.auth.session_record import SignInSession
from authsvc.core import clock, security, store
from authsvc.core.models import User
from authsvc.core.settings import settings
from authsvc.core.tenancy import current_domain, issuer
from authsvc.oauth import keys

# The query parameter that carries the signed note back from the sign-in page.
SIGN_IN_ASKED = "sign_in_asked"
# How long the note is good for: the sign-in page's lifetime; an old note (from
# the browser's history, say) cannot stand in for a new sign-in.
SIGN_IN_WINDOW = 600
PROMPTS_SUPPORTED = ["none", "login", "consent", "select_account"]
# How an answer reaches the client (OAuth 2.0 Multiple Response Type Encoding Practices 2.1): in the query only.
RESPONSE_MODES_SUPPORTED = ["query"]
_MAX_AGE = re.compile(r"[0-9]{1,10}")


# OpenID Connect Core 3.1.2.6's errors, as authlib.oidc.core.errors has them: importing that
# package loads Authlib's ID token code, and with it joserfc and cryptography (about 10 MB),
# in every worker (docs/performance.md, "Memory").
class LoginRequiredError(OAuth2Error):
    error = "login_required"


class ConsentRequiredError(OAuth2Error):
    error = "consent_required"


class RequestURINotSupportedError(OAuth2Error):
    error = "request_uri_not_supported"


@dataclass(frozen=True)
class AuthenticationRequest:
    """An authorisation request's demands on the sign-in behind it."""

    prompts: frozenset[str]
    max_age: int | None
    login_hint: str | None
    # The ``sub`` of a valid id_token_hint.
    hinted_sub: str | None
    # When this request sent the user to sign in (ms), from a valid note, and the note's id (to spend it).
    sign_in_asked_at: int | None
    sign_in_note: str | None = None
    # ``acr_values`` asks for a multi-factor sign-in (step-up).
    wants_mfa: bool = False

    @property
    def silent(self) -> bool:
        """``prompt=none``: answer without any page."""
        return "none" in self.prompts

    @property
    def asks_consent(self) -> bool:
        return "consent" in self.prompts

    def signed_in_since_asked(self, session: SignInSession) -> bool:
        return self.sign_in_asked_at is not None and session.created >= self.sign_in_asked_at

    def wants_a_new_sign_in(self, user: User, session: SignInSession) -> bool:
        # select_account: a browser holds one session, so choosing an account is signing in as it.
        if self.prompts & {"login", "select_account"} or self.max_age == 0:
            return True
        # The age as the relying party sees it: auth_time is in whole seconds.
        if self.max_age is not None and clock.now() - session.auth_time > self.max_age:
            return True
        # Step-up: a session without a second factor signs in again, with one (the sign-in page asks for
        # it when it returns to a request with these acr_values).
        if self.wants_mfa and "mfa" not in (session.amr or []):
            return True
        return self.hinted_sub is not None and self.hinted_sub != str(user.id)


def read(grant: Any, _result: None = None) -> None:
    """Read the request's OpenID Connect parameters onto ``grant.authentication``.

    An Authlib hook, after the client, the redirect URI and the scope are validated.
    """
    data = grant.request.payload.data
    # Core 6: a request_uri that is not one of our pushed requests' (authsvc.oauth.pushed read those and request
    # objects before) would have to be fetched, which this provider does not do: it says so rather than ignore it.
    if "request_uri" in data:
        raise RequestURINotSupportedError(
            "Only a request_uri from the pushed authorization request endpoint is taken; send 'request' by value."
        )
    response_mode = data.get("response_mode")
    if response_mode and response_mode not in RESPONSE_MODES_SUPPORTED:  # empty: omitted (RFC 6749 3.1)
        # Ignored, the answer would reach a client that expects it another way (a form post, a JWT): refused, so
        # that the client learns it, in the one mode it has (response_modes_supported).
        raise InvalidRequestError(f"'response_mode' must be one of: {' '.join(RESPONSE_MODES_SUPPORTED)}.")
    prompts = frozenset(data.get("prompt", "").split())
    if "none" in prompts and len(prompts) > 1:
        raise InvalidRequestError("'prompt=none' cannot be combined with another value.")
    max_age = data.get("max_age")
    if max_age is not None and not _MAX_AGE.fullmatch(max_age):
        raise InvalidRequestError("'max_age' must be a number of seconds.")
    hint = data.get("id_token_hint")
    note = _note(data.get(SIGN_IN_ASKED))
    grant.authentication = AuthenticationRequest(
        prompts=prompts,
        max_age=int(max_age) if max_age is not None else None,
        # The sign-in page decides whether it is an address its form takes.
        login_hint=data.get("login_hint") or None,
        hinted_sub=_subject_of(hint) if hint is not None else None,
        sign_in_asked_at=note.asked_at if note else None,
        sign_in_note=note.id if note else None,
        wants_mfa=factors.asks_for_mfa(data.get("acr_values")),
    )


def _subject_of(id_token_hint: str) -> str:
    """The ``sub`` of an ID token this domain issued, expired or not (Core 3.1.2.1)."""
    claims = keys.own_id_token_claims(current_domain(), id_token_hint, issuer())
    if claims is None:
        raise InvalidRequestError("'id_token_hint' is not an ID token issued here.")
    return claims["sub"]


def _serializer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(settings().secret_key, salt="authsvc.oauth.sign-in-asked")


@dataclass(frozen=True)
class SignInNote:
    """The sign-in page's note, read back: when the sign-in was asked for (ms) and the note's own id."""

    asked_at: int
    id: str


def _this_request() -> str:
    """A digest of the authorisation request the browser is at: its query, but the note (the way back's URL)."""
    pairs = sorted((name, value) for name, value in request.args.items(multi=True) if name != SIGN_IN_ASKED)
    return security.digest(urlencode(pairs))


def _spent_key(note_id: str) -> str:
    return f"sign-in-asked:{note_id}"


def _note(text: str | None) -> SignInNote | None:
    """The note of a sign-in this very request asked for, within SIGN_IN_WINDOW and not yet spent; else None."""
    if not text:
        return None
    try:
        note = _serializer().loads(text, max_age=SIGN_IN_WINDOW)
    except BadData:
        return None
    if not isinstance(note, dict) or not isinstance(note.get("at"), int) or not isinstance(note.get("id"), str):
        return None
    if note.get("for") != _this_request() or store.client().exists(store.PREFIX + _spent_key(note["id"])):
        return None
    return SignInNote(asked_at=note["at"], id=note["id"])


def spend_sign_in_note(grant: Any) -> None:
    """Spend the note this request came back with, as its answer is made: once (SET NX, across workers).

    Called before a code is issued: a second answer from one note (two tabs at once) gets ``login_required``.
    """
    auth: AuthenticationRequest | None = getattr(grant, "authentication", None)
    if auth is None or auth.sign_in_note is None:
        return
    if not store.claim_once(_spent_key(auth.sign_in_note), SIGN_IN_WINDOW):
        raise _error(LoginRequiredError, grant, "The sign-in this request asked for has answered another already.")


def spend_sign_in_note_of_request() -> None:
    """Spend the note of this request, answered with an error: the grant, and what it read, may not exist."""
    note = _note(request.args.get(SIGN_IN_ASKED))
    if note is not None:
        store.claim_once(_spent_key(note.id), SIGN_IN_WINDOW)


def needs_sign_in(grant: Any, user: User | None, session: SignInSession | None) -> bool:
    """Whether the user must sign in (again) before this request is answered.

    Raises ``login_required`` where the answer must come without a page
    (``prompt=none``), and where the sign-in this request asked for brought
    another user than its ``id_token_hint`` names (Core 3.1.2.1).
    """
    auth: AuthenticationRequest = grant.authentication
    if user is None or session is None:
        needed = True
    elif auth.signed_in_since_asked(session):
        if auth.hinted_sub not in (None, str(user.id)):
            raise _error(LoginRequiredError, grant, "The user who signed in is not the one 'id_token_hint' names.")
        # A fresh sign-in answers everything but step-up: acr_values=mfa needs the second factor itself
        # (the note is not tied to this request, so it cannot vouch for how the user signed in).
        needed = auth.wants_mfa and "mfa" not in (session.amr or [])
    else:
        needed = auth.wants_a_new_sign_in(user, session)
    if needed and auth.silent:
        raise _error(LoginRequiredError, grant, "The user must sign in, and 'prompt=none' allows no page.")
    return needed


def refuse_consent_page(grant: Any) -> None:
    """``consent_required`` for a ``prompt=none`` request that would need the consent page."""
    if grant.authentication.silent:
        raise _error(ConsentRequiredError, grant, "The user must approve, and 'prompt=none' allows no page.")


def sign_in_url(grant: Any, user: User | None) -> str:
    """The sign-in page, returning to this request with a note of when the sign-in was asked for."""
    auth: AuthenticationRequest = grant.authentication
    note = _serializer().dumps({"at": clock.now_ms(), "id": security.new_secret(), "for": _this_request()})
    parts = urlsplit(request.full_path)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != SIGN_IN_ASKED]
    params = {"continue": f"{parts.path}?{urlencode([*query, (SIGN_IN_ASKED, note)])}"}
    if user is not None:
        # Signed in already: the page shows its form all the same.
        params["prompt"] = "login"
    if auth.login_hint:
        params["login_hint"] = auth.login_hint
    return "/auth/login?" + urlencode(params)


def _error(error_class: type[OAuth2Error], grant: Any, description: str) -> OAuth2Error:
    return error_class(description, redirect_uri=grant.redirect_uri, state=grant.request.payload.state)
