"""``seed-demo``: the demo data ``scripts/run`` starts with."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

import click
from flask.cli import with_appcontext
from sqlalchemy import select

from authsvc import admin
from authsvc.cli.common import admin_rules, emit
from authsvc.core.database import db
from authsvc.core.models import Application, Domain, User


@click.command("seed-demo")
@with_appcontext
@click.option("--host", default="localhost", show_default=True)
def seed_demo(host: str) -> None:
    """Create a demo domain, application and service account once; print their credentials.

    The generated password is kept in ``instance/demo.json`` (mode 0600) so
    that later runs can print it again; only its bcrypt hash is in the database.
    """
    from config.settings import INSTANCE_DIR

    path = Path(INSTANCE_DIR) / "demo.json"
    saved = json.loads(path.read_text()) if path.exists() else {}
    actor = admin.command_line()
    domain = db.session.scalar(select(Domain).where(Domain.host == host.lower()))
    with admin_rules():
        if domain is None:
            domain = admin.create_domain(actor, {"name": "Demo", "host": host})
        application = db.session.scalar(select(Application).where(Application.domain_id == domain.id))
        if application is None:
            application, _ = admin.create_application(
                actor,
                {
                    "domain": str(domain.id),
                    "name": "Demo application",
                    "redirect_uris": ["http://localhost:8080/callback"],
                    "scopes": "public mqtt.read",
                    # The legacy mode: the README's curl flow follows the specification literally, without PKCE.
                    "require_pkce": False,
                },
            )
        email = saved.get("email", f"service@{domain.host}")
        user = db.session.scalar(select(User).where(User.domain_id == domain.id, User.email == email))
        if user is None or "password" not in saved:
            saved = {"email": email, "password": secrets.token_urlsafe(12)}
            if user is None:
                user = admin.create_user(
                    actor,
                    {
                        "domain": str(domain.id),
                        "email": email,
                        "name": "Demo service account",
                        "service_account": True,
                        "password": saved["password"],
                    },
                )
            else:
                admin.update_user(actor, user, {"password": saved["password"]})
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(saved, f)
    emit(
        {
            "domain": domain.host,
            "client_id": application.client_id,
            "redirect_uri": application.redirect_uris[0],
            "username": user.email,
            "password": saved["password"],
        }
    )
