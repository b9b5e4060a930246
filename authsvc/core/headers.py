"""The caching and referrer headers of answers that carry credentials or personal data.

Token material, codes, secrets and user records must never be stored by a
browser or a proxy (RFC 6749 5.1, RFC 9111 5.2.2.5), and a redirect that
carries a code or a session must not leak its URL as a Referer (RFC 9700
4.2.4). Views mark their answers here rather than setting the headers by
hand: ``uncached(response)`` for one answer, ``@no_store`` for every answer
a view returns, or ``blueprint.after_request(uncached)`` for a whole
blueprint. Answers meant to be cached (JWKS, discovery metadata) set their
own ``Cache-Control`` and use none of these.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, overload

from flask import Response, make_response

NO_REFERRER = "no-referrer"


def uncached(response: Response, *, referrer_policy: str | None = None) -> Response:
    """``response`` with ``Cache-Control: no-store`` (and ``Referrer-Policy`` when given)."""
    response.headers["Cache-Control"] = "no-store"
    if referrer_policy is not None:
        response.headers["Referrer-Policy"] = referrer_policy
    return response


View = Callable[..., Any]


@overload
def no_store(view: View) -> View: ...
@overload
def no_store(*, referrer_policy: str | None = None) -> Callable[[View], View]: ...


def no_store(view: View | None = None, *, referrer_policy: str | None = None) -> Any:
    """Mark every answer ``view`` returns as uncached (errors it raises are answered by the handlers, as before).

    ``@no_store`` or ``@no_store(referrer_policy=NO_REFERRER)``.
    """

    def decorate(view: View) -> View:
        @wraps(view)
        def wrapped(*args: Any, **kwargs: Any) -> Response:
            return uncached(make_response(view(*args, **kwargs)), referrer_policy=referrer_policy)

        return wrapped

    return decorate(view) if view is not None else decorate
