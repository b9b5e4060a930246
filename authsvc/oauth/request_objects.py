"""Request objects (RFC 9101, JAR): an authorisation request sent as a JWT the application signed.

A request object comes by value, as ``request`` at the authorisation endpoint
or at the pushed authorisation request endpoint (authsvc.oauth.pushed). It is
signed with a key the application registered for private_key_jwt (its
``jwks`` or ``jwks_uri``, resolved as authsvc.oauth.client_assertion_keys resolves a
client assertion's), by an asymmetric algorithm: an unsigned one (``alg``
``none``) proves nothing and is refused. Its claims replace the request's
parameters; the rules on top of RFC 9101 are FAPI 2.0's: ``typ``
``oauth-authz-req+jwt``, ``iss`` the client_id, ``aud`` the issuer, and an
``exp`` at most AUTHSVC_REQUEST_OBJECT_MAX_LIFETIME ahead (``nbf`` no older).

A request object is not single use: the browser brings it back after the sign-in page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from authlib.oauth2.rfc6749 import InvalidClientError, InvalidRequestError, OAuth2Error
from joserfc.errors import JoseError

from authsvc.core import clock, signed_json
from authsvc.core.models import Application
from authsvc.core.settings import settings
from authsvc.core.tenancy import issuer
from authsvc.oauth import client_assertion_keys, client_authentication
from authsvc.oauth.parameters import REPEATABLE_PARAMETERS, Parameters, check_value

if TYPE_CHECKING:
    from joserfc.jwk import Key

TYPE = "oauth-authz-req+jwt"
ALGORITHMS = client_authentication.CLIENT_ASSERTION_ALGORITHMS
LEEWAY = client_assertion_keys.LEEWAY
# The JWT's own claims: about the object, not parameters of the request it carries.
_JWT_CLAIMS = {"iss", "aud", "exp", "nbf", "iat", "jti"}


# RFC 9101's errors, as authlib.oauth2.rfc9101.errors has them: importing that package loads
# its authorization server, and with it joserfc and cryptography (about 10 MB), in every worker.
class InvalidRequestObjectError(OAuth2Error):
    error = "invalid_request_object"
    description = "The request parameter contains an invalid Request Object."
    status_code = 400


class InvalidRequestUriError(OAuth2Error):
    error = "invalid_request_uri"
    description = "The request_uri in the authorization request returns an error or contains invalid data."
    status_code = 400


def _refused(description: str) -> InvalidRequestObjectError:
    return InvalidRequestObjectError(description=description)


def parameters(client: Application, request_object: str, client_id: str | None) -> Parameters:
    """The authorisation request ``request_object`` carries, once its signature and claims are checked.

    ``client_id`` is the one sent beside it (RFC 9101 5: they must be the same).
    Raises ``invalid_request_object`` naming what is wrong.
    """
    _check_header(request_object)
    if client.jwks is None and client.jwks_uri is None:
        raise _refused("The application has no registered keys (jwks or jwks_uri) to verify request objects with.")
    from joserfc import jwt  # loaded by _check_header already

    try:
        token = jwt.decode(
            request_object, _key_resolver(client), algorithms=ALGORITHMS, decoder_cls=signed_json.SignedJSONDecoder
        )
    except InvalidClientError as exc:  # no matching key, or the jwks_uri could not be fetched
        raise _refused((exc.description or "No usable key.").replace("client assertion", "request object")) from None
    except JoseError as exc:
        raise _refused(f"The request object could not be verified: {exc.description or exc.error}.") from None
    except (ValueError, RecursionError):
        raise _refused("The request object could not be verified.") from None
    claims = token.claims
    _check_claims(client, claims, client_id)
    params: Parameters = {}
    for name, value in claims.items():
        if name in _JWT_CLAIMS or name == "claims":  # the claims parameter is not read (OpenID Connect 5.5)
            continue
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)  # max_age may come as a number (OpenID Connect 6.1)
        # RFC 8707 2: several resources are an array of strings in a request object.
        repeated = name in REPEATABLE_PARAMETERS and isinstance(value, list) and value
        values = value if repeated else [value]
        if not all(isinstance(v, str) for v in values):
            raise _refused(f"The request object's '{_name(name)}' must be a string.")
        try:
            for v in values:
                check_value(name, v)
        except InvalidRequestError as exc:
            raise _refused(f"In the request object: {exc.description}") from None
        params[name] = list(values) if repeated else value
    return params


def _name(name: str) -> str:
    return name if len(name) <= 40 and name.isascii() and name.isidentifier() else "parameter"


def _check_header(request_object: str) -> None:
    """The JOSE header, read before any key is looked for: what it names decides whether to go on."""
    # joserfc loads cryptography (about 10 MB): imported at the first request object, not with the app.
    from joserfc import jws

    try:
        header = jws.extract_compact(request_object.encode()).headers()
        signed_json.jose_header(request_object)  # each member once (joserfc's reading keeps the last)
    except (JoseError, ValueError, UnicodeError, RecursionError):
        message = "The request object is not a signed JWT in compact form (encrypted ones are not read)."
        raise _refused(message) from None
    alg = header.get("alg")
    if alg == "none" or alg is None:
        raise _refused("The request object is unsigned (alg none): sign it with a key of the application.")
    if alg not in ALGORITHMS:
        raise _refused(f"The request object's alg must be one of {' '.join(ALGORITHMS)}.")
    typ = header.get("typ")
    if not isinstance(typ, str) or typ.lower().removeprefix("application/") != TYPE:
        raise _refused(f"The request object's typ must be {TYPE} (RFC 9101 10.8).")
    kid = header.get("kid")
    if kid is not None and not isinstance(kid, str):
        raise _refused("The request object's kid must be a string.")


def _key_resolver(client: Application) -> Any:
    def resolve(obj: Any) -> Key:
        header = obj.headers()
        return client_assertion_keys.client_key(client, header.get("kid"), header["alg"])

    return resolve


def _number(claims: dict[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise _refused(f"The request object's {name} must be a number of seconds.")
    return value


def _check_claims(client: Application, claims: dict[str, Any], client_id: str | None) -> None:
    if claims.get("iss") != client.client_id:
        raise _refused("The request object's iss must be the application's client_id.")
    aud = claims.get("aud")
    if not (aud == issuer() or (isinstance(aud, list) and issuer() in aud)):
        raise _refused(f"The request object's aud must be this server's issuer, {issuer()}.")
    if claims.get("client_id") != client.client_id or client_id not in (None, client.client_id):
        raise _refused("The request object's client_id must be the client_id sent with it.")
    if "request" in claims or "request_uri" in claims:
        raise _refused("A request object cannot hold 'request' or 'request_uri' (RFC 9101 4).")
    now = clock.time()
    limit = settings().request_object_max_lifetime
    exp = _number(claims, "exp")
    if exp is None:
        raise _refused("The request object needs an exp.")
    if exp <= now - LEEWAY:
        raise _refused("The request object has expired.")
    if exp > now + limit + LEEWAY:
        raise _refused(f"The request object's exp is more than {limit} seconds ahead.")
    nbf = _number(claims, "nbf")
    if nbf is not None and nbf > now + LEEWAY:
        raise _refused("The request object is not valid yet (nbf).")
    if nbf is not None and nbf < now - limit - LEEWAY:
        raise _refused(f"The request object's nbf is more than {limit} seconds ago.")
