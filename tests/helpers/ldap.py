"""LDAP / Active Directory sign-in for the tests: the slapd on loopback (tests/fakes/ldap_directory.py), registered
as an operator does, and signing in against it.

The directory speaks StartTLS and LDAPS with a CA the test made; the service verifies its certificate with
that CA. Used by the tests in tests/api/ldap/, whose conftest.py offers the fixtures defined here.
"""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from authsvc.core.models import AuditRecord
from devtools.services import slapd_binary
from tests.fakes.ldap_directory import PEOPLE, SERVICE_DN, SERVICE_PASSWORD, Directory
from tests.helpers import HOST, REDIRECT_URI, HttpsClient, get_code, headers

INSPECT = "/api/engine/v2/api_keys/inspect"


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    """A running slapd, seeded; one per test module (imported fixtures are not shared between modules)."""
    if slapd_binary() is None:
        pytest.skip("slapd is not installed (Debian: apt-get install slapd; ./scripts/test installs it as root)")
    running = Directory(tmp_path_factory.mktemp("slapd"))
    yield running
    running.stop()


def create_directory(runner, directory, *extra: str, url: str | None = None, ca: bool = True) -> str:
    """``ldap create`` as an operator runs it; StartTLS to the test slapd unless ``url`` says otherwise."""
    url = url or directory.starttls_url
    args = ["ldap", "create", "--domain", HOST, "--name", "Corp directory", "--url", url]
    if url.startswith("ldap://"):
        args.append("--starttls")
    args += ["--bind-dn", SERVICE_DN, "--bind-password", SERVICE_PASSWORD, "--base", PEOPLE]
    if ca:
        args += ["--ca-file", str(directory.ca.ca_file)]
    result = runner.invoke(args=[*args, *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["id"]


@pytest.fixture
def corp(runner, setup, directory):
    return create_directory(runner, directory)


def signin(client, email, password, host=HOST):
    return client.post("/auth/signin", json={"email": email, "password": password}, headers=headers(host))


def events(world, name):
    return world.query(select(AuditRecord).where(AuditRecord.event == name).order_by(AuditRecord.id))


def tokens(client, client_id):
    """The token answer for the signed-in user, by the authorisation code flow."""
    body = {"grant_type": "authorization_code", "code": get_code(client, client_id), "redirect_uri": REDIRECT_URI}
    answer = client.post("/auth/oauth/token", data={**body, "client_id": client_id}, headers=headers())
    assert answer.status_code == 200, answer.get_json()
    return answer.get_json()


def access_token(client, client_id):
    return tokens(client, client_id)["access_token"]


def directory_browser(make_app, directory, **config):
    """An app built with ``config`` whose domain signs in against ``directory``, and a browser of it."""
    app = make_app(**config)
    create_directory(app.test_cli_runner(), directory)
    app.test_client_class = HttpsClient
    return app, app.test_client()
