"""The modules of authsvc one refresh-token request visits, in order: ``python -m devtools.request_path``.

It builds the app on a throwaway SQLite file and the in-process store (no server needed), seeds a domain,
a public application and a service account, gets a refresh token by the password grant, refreshes once
to warm up (what a worker loads once is not the request's way), then sends one more
``POST /auth/oauth/token grant_type=refresh_token`` through Flask's test client under
``sys.setprofile`` and prints each authsvc module at its first entry, with its package, and the counts.
docs/architecture.md shows its output.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

HOST = "auth.example.com"
PASSWORD = "correct horse battery staple"


def _app(workdir: Path) -> Any:
    """The app on a new SQLite database (the schema through the migrations) and the in-process store."""
    os.environ["AUTHSVC_INSTANCE_DIR"] = str(workdir / "instance")
    for name in ("DATABASE_URL", "REDIS_URL", "SECRET_KEY", "AUTHSVC_ENV", "AUTHSVC_DEFAULT_DOMAIN"):
        os.environ.pop(name, None)
    from flask_migrate import upgrade

    from authsvc import create_app
    from authsvc.cli import migrations

    app = create_app(
        {
            "TESTING": True,
            "SECRET_KEY": "request-path",
            "SQLALCHEMY_DATABASE_URI": f"sqlite:///{workdir / 'authsvc.db'}",
            "REDIS_URL": None,
            "AUTHSVC_BCRYPT_ROUNDS": 4,
        }
    )
    migrations.install(app)
    logging.getLogger("authsvc.migrations").setLevel(logging.WARNING)  # only the path on the output
    with app.app_context():
        upgrade()
    return app


def _client_id(app: Any) -> str:
    """A domain, its public application and a service account (the password grant's user)."""
    from authsvc.core.database import db
    from authsvc.core.models import Application, Domain, User

    with app.app_context():
        domain = Domain(name=HOST, host=HOST, scopes="public")
        db.session.add(domain)
        db.session.flush()
        application = Application(
            domain_id=domain.id, name="App", client_id="request-path", redirect_uris=[], scopes="public"
        )
        user = User(domain_id=domain.id, email="service@example.com", name="Service", service_account=True)
        user.set_password(PASSWORD)
        db.session.add_all([application, user])
        db.session.commit()
        return application.client_id


def _token(client: Any, body: dict[str, str]) -> dict[str, Any]:
    response = client.post("/auth/oauth/token", data=body, headers={"Host": HOST}, base_url=f"https://{HOST}")
    if response.status_code != 200:
        raise SystemExit(f"the token endpoint answered {response.status_code}: {response.get_data(as_text=True)}")
    answer: dict[str, Any] = response.get_json()
    return answer


def trace(app: Any, client_id: str) -> list[str]:
    """The authsvc modules the second refresh visits, each at its first entry."""
    client = app.test_client()
    password = {"grant_type": "password", "username": "service@example.com", "password": PASSWORD}
    refresh_token = _token(client, {**password, "client_id": client_id})["refresh_token"]

    def refresh(token: str) -> str:
        body = {"grant_type": "refresh_token", "refresh_token": token, "client_id": client_id}
        new: str = _token(client, body)["refresh_token"]
        return new

    refresh_token = refresh(refresh_token)  # the warm-up
    seen: list[str] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if (module == "authsvc" or module.startswith("authsvc.")) and module not in seen:
            seen.append(module)

    sys.setprofile(profile)
    try:
        refresh(refresh_token)
    finally:
        sys.setprofile(None)
    return seen


def package(module: str) -> str:
    """``authsvc.core.readers.pool`` is in ``core``; ``authsvc`` itself is the app."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "authsvc"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="authsvc-request-path-") as workdir:
        app = _app(Path(workdir))
        modules = trace(app, _client_id(app))
    width = max(len(module) for module in modules) - len("authsvc.")
    for module in modules:
        print(f"{module.removeprefix('authsvc.'):<{width}}  {package(module)}")
    packages = list(dict.fromkeys(package(module) for module in modules))
    print(f"{len(modules)} modules in {len(packages)} packages: {', '.join(packages)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
