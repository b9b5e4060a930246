"""``seed-demo``: the demo data ``scripts/run`` starts with, and the block it prints about them."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any

import click
from flask.cli import with_appcontext
from sqlalchemy import select

from authsvc import admin
from authsvc.admin.actors import Actor
from authsvc.cli.common import admin_rules, emit
from authsvc.core.database import db
from authsvc.core.models import Application, Domain, User

# OpenID Connect's scopes beside the platform's, so that the demo's code flow gets ID tokens.
DEMO_SCOPES = "openid profile email public mqtt.read"
REDIRECT_URI = "http://localhost:8080/callback"


@click.command("seed-demo")
@with_appcontext
@click.option("--host", default="localhost", show_default=True)
@click.option(
    "--banner", is_flag=True, help="Print the demo as a person reads it (what ./scripts/run shows), not as JSON."
)
def seed_demo(host: str, banner: bool) -> None:
    """Create the demo domain once: a person, a service account, an application for people and one for machines.

    Prints their credentials on every call and changes nothing once they exist. The generated
    passwords and the machine application's secret are kept in ``instance/demo.json`` (mode
    0600) so that later runs can print them again; the database holds only their digests.
    """
    from config.settings import INSTANCE_DIR

    path = Path(INSTANCE_DIR) / "demo.json"
    saved: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    actor = admin.command_line()
    with admin_rules():
        domain = _domain(actor, host)
        application = _application(actor, domain)
        person = _user(actor, domain, saved, "person", f"demo@{domain.host}", name="Demo person", admin=True)
        service = _user(
            actor, domain, saved, "service", f"service@{domain.host}", name="Demo service account", service_account=True
        )
        machine = _machine(actor, domain, service, saved)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(saved, f)
    base = f"http://{domain.host}:{os.environ.get('PORT', '5000')}"
    demo = {
        "domain": domain.host,
        "client_id": application.client_id,
        "redirect_uri": application.redirect_uris[0],
        "scopes": application.scopes,
        "person": person.email,
        "person_password": saved["person"]["password"],
        "username": service.email,
        "password": saved["service"]["password"],
        "machine_client_id": machine.client_id,
        "machine_client_secret": saved["machine"]["client_secret"],
        "signin_url": f"{base}/auth/login",
        "console_url": f"{base}/auth/admin/",
    }
    if banner:
        click.echo(render_banner(demo))
    else:
        emit(demo)


def render_banner(demo: dict[str, str]) -> str:
    """The demo block ``scripts/run`` prints before it serves (README.md shows it)."""
    rows = [
        ("domain", demo["domain"]),
        ("sign in", demo["signin_url"]),
        ("console", f"{demo['console_url']} (the demo person is an admin)"),
        ("person", f"{demo['person']} / {demo['person_password']}"),
        ("service account", f"{demo['username']} / {demo['password']} (password grant)"),
        ("application", f"{demo['client_id']} (code flow, redirect URI {demo['redirect_uri']})"),
        ("machine application", f"{demo['machine_client_id']} / {demo['machine_client_secret']} (client credentials)"),
    ]
    lines = ["Demo (embedded defaults; `.venv/bin/flask --app app seed-demo` prints it as JSON):"]
    lines += [f"  {label:<20} {value}" for label, value in rows]
    return "\n".join(lines)


def _domain(actor: Actor, host: str) -> Domain:
    domain = db.session.scalar(select(Domain).where(Domain.host == host.lower()))
    if domain is None:
        return admin.create_domain(actor, {"name": "Demo", "host": host, "scopes": DEMO_SCOPES})
    missing = [scope for scope in DEMO_SCOPES.split() if scope not in domain.scope_list]
    # A demo seeded before OpenID Connect's scopes were part of it gets them now.
    return admin.add_domain_scopes(actor, domain, {"scopes": " ".join(missing)}) if missing else domain


def _application(actor: Actor, domain: Domain) -> Application:
    application = db.session.scalar(
        select(Application).where(Application.domain_id == domain.id, Application.name == "Demo application")
    )
    if application is None:
        application, _ = admin.create_application(
            actor,
            {
                "domain": str(domain.id),
                "name": "Demo application",
                "redirect_uris": [REDIRECT_URI],
                "scopes": DEMO_SCOPES,
                # The legacy mode: the platform's clients follow the specification's flow literally, without PKCE.
                "require_pkce": False,
            },
        )
    elif set(DEMO_SCOPES.split()) - set(application.scopes.split()):
        application = admin.update_application(actor, application, {"scopes": DEMO_SCOPES})
    return application


def _user(actor: Actor, domain: Domain, saved: dict[str, Any], role: str, email: str, **fields: Any) -> User:
    """The demo's ``role`` user, made (or given a new password) when ``saved`` holds none for it."""
    if role == "service" and "password" in saved:
        # instance/demo.json of a demo seeded before it had a person: its one account was the service account.
        saved["service"] = {"email": saved.pop("email"), "password": saved.pop("password")}
    kept = saved.setdefault(role, {"email": email})
    user = db.session.scalar(select(User).where(User.domain_id == domain.id, User.email == kept["email"]))
    if user is None or "password" not in kept:
        kept["password"] = secrets.token_urlsafe(12)
        if user is None:
            user = admin.create_user(
                actor, {"domain": str(domain.id), "email": kept["email"], "password": kept["password"], **fields}
            )
        else:
            admin.update_user(actor, user, {"password": kept["password"]})
    return user


def _machine(actor: Actor, domain: Domain, service: User, saved: dict[str, Any]) -> Application:
    """The confidential application for the client credentials grant, acting as the service account."""
    kept = saved.get("machine", {})
    application = db.session.scalar(
        select(Application).where(Application.domain_id == domain.id, Application.client_id == kept.get("client_id"))
    )
    if application is None:
        application, secret = admin.create_application(
            actor,
            {
                "domain": str(domain.id),
                "name": "Demo machine",
                "confidential": True,
                "service_account": str(service.id),
                "scopes": "public mqtt.read",
            },
        )
        saved["machine"] = {"client_id": application.client_id, "client_secret": secret}
    return application
