"""The library floor: a token endpoint built only as Authlib's documentation builds one.

Authlib's example server (authlib/example-oauth2-server: ``models.py``,
``oauth2.py``, ``routes.py``) in one module: Flask-SQLAlchemy models on
Authlib's mixins, ``AuthorizationServer`` with the client credentials, code
and refresh grants, the code stored in SQL, one INSERT per token. Two
departures, each to do the work ours does: the client secret is stored as its
SHA-256 digest (as ours is, compared in constant time), and the authorisation
endpoint issues the code without a consent page (ours skips consent unless the
application asks for it). Served by the service's gunicorn command on the
service's database (tables ``twin_*``). Its rows are the twins of ours in
bench/README.md, "The floors".

Run as ``gunicorn -c config/gunicorn.py 'bench.twin:create_app()'``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import time

from authlib.integrations.flask_oauth2 import AuthorizationServer
from authlib.integrations.sqla_oauth2 import (
    OAuth2AuthorizationCodeMixin,
    OAuth2ClientMixin,
    OAuth2TokenMixin,
    create_query_client_func,
    create_save_token_func,
)
from authlib.oauth2.rfc6749 import grants
from flask import Flask, Response, session
from flask_sqlalchemy import SQLAlchemy

db = SQLAlchemy()


# ---------------------------------------------------------------- models.py


class User(db.Model):  # type: ignore[name-defined]
    __tablename__ = "twin_user"
    id = db.Column(db.Integer, primary_key=True)
    username = db.Column(db.String(40), unique=True)

    def get_user_id(self) -> int:
        return self.id


class OAuth2Client(db.Model, OAuth2ClientMixin):  # type: ignore[name-defined]
    __tablename__ = "twin_client"
    id = db.Column(db.Integer, primary_key=True)
    user_id = db.Column(db.Integer, db.ForeignKey("twin_user.id", ondelete="CASCADE"))
    user = db.relationship("User")

    def check_client_secret(self, client_secret: str) -> bool:
        # Stored as a SHA-256 digest, as ours are (docs/security.md), not in clear as in the example.
        return hmac.compare_digest(self.client_secret, hashlib.sha256(client_secret.encode()).hexdigest())


class OAuth2AuthorizationCode(db.Model, OAuth2AuthorizationCodeMixin):  # type: ignore[name-defined]
    __tablename__ = "twin_code"
    id = db.Column(db.Integer, primary_key=True)
    user_id = db.Column(db.Integer, db.ForeignKey("twin_user.id", ondelete="CASCADE"))
    user = db.relationship("User")


class OAuth2Token(db.Model, OAuth2TokenMixin):  # type: ignore[name-defined]
    __tablename__ = "twin_token"
    id = db.Column(db.Integer, primary_key=True)
    user_id = db.Column(db.Integer, db.ForeignKey("twin_user.id", ondelete="CASCADE"))
    user = db.relationship("User")

    def is_refresh_token_active(self) -> bool:
        if self.refresh_token_revoked_at:
            return False
        return self.issued_at + self.expires_in * 2 >= time.time()


# ---------------------------------------------------------------- oauth2.py


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]

    def save_authorization_code(self, code: str, request: object) -> OAuth2AuthorizationCode:
        auth_code = OAuth2AuthorizationCode(
            code=code,
            client_id=request.client.client_id,  # type: ignore[attr-defined]
            redirect_uri=request.payload.redirect_uri,  # type: ignore[attr-defined]
            scope=request.payload.scope,  # type: ignore[attr-defined]
            user_id=request.user.id,  # type: ignore[attr-defined]
        )
        db.session.add(auth_code)
        db.session.commit()
        return auth_code

    def query_authorization_code(self, code: str, client: OAuth2Client) -> OAuth2AuthorizationCode | None:
        auth_code = OAuth2AuthorizationCode.query.filter_by(code=code, client_id=client.client_id).first()
        if auth_code and not auth_code.is_expired():
            return auth_code
        return None

    def delete_authorization_code(self, authorization_code: OAuth2AuthorizationCode) -> None:
        db.session.delete(authorization_code)
        db.session.commit()

    def authenticate_user(self, authorization_code: OAuth2AuthorizationCode) -> User | None:
        return db.session.get(User, authorization_code.user_id)


class RefreshTokenGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]
    INCLUDE_NEW_REFRESH_TOKEN = True  # rotation, as ours does

    def authenticate_refresh_token(self, refresh_token: str) -> OAuth2Token | None:
        token = OAuth2Token.query.filter_by(refresh_token=refresh_token).first()
        if token and token.is_refresh_token_active():
            return token
        return None

    def authenticate_user(self, credential: OAuth2Token) -> User | None:
        return db.session.get(User, credential.user_id)

    def revoke_old_credential(self, credential: OAuth2Token) -> None:
        now = int(time.time())
        credential.access_token_revoked_at = now
        credential.refresh_token_revoked_at = now
        db.session.add(credential)
        db.session.commit()


authorization = AuthorizationServer(
    query_client=create_query_client_func(db.session, OAuth2Client),
    save_token=create_save_token_func(db.session, OAuth2Token),
)


# ---------------------------------------------------------------- app.py, routes.py


def sqlalchemy_url(database_url: str) -> str:
    """``DATABASE_URL`` (``postgres://`` or ``postgresql://``, as the service takes it) for psycopg 3."""
    return re.sub(r"^postgres(ql)?(\+\w+)?://", "postgresql+psycopg://", database_url)


def create_app() -> Flask:
    app = Flask(__name__)
    app.config["SECRET_KEY"] = os.environ["SECRET_KEY"]
    app.config["SQLALCHEMY_DATABASE_URI"] = sqlalchemy_url(os.environ["DATABASE_URL"])
    # The example server's setting (its app.py): without it Authlib issues no refresh token at all, so the
    # code exchange would skip the refresh token ours issues, and a refresh would get no token to rotate to.
    app.config["OAUTH2_REFRESH_TOKEN_GENERATOR"] = True
    db.init_app(app)
    authorization.init_app(app)
    authorization.register_grant(grants.ClientCredentialsGrant)
    authorization.register_grant(AuthorizationCodeGrant)
    authorization.register_grant(RefreshTokenGrant)

    @app.get("/oauth/authorize")
    def authorize() -> Response:
        user = db.session.get(User, session["id"]) if "id" in session else None
        return authorization.create_authorization_response(grant_user=user)

    @app.post("/oauth/token")
    def issue_token() -> Response:
        return authorization.create_token_response()

    return app
