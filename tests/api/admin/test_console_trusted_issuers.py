"""The console's trusted issuers page and an application's token-exchange policy (docs/token-exchange.md): an
admin trusts an issuer with its flags, adds an ID-JAG audience with its client ids, removes one, and allows an
application to exchange tokens; the same verbs as the admin API, so the same rules, messages and audit records."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import select

from authsvc.core.models import Application, TrustedIssuer
from tests.helpers.console import as_admin, audit, get, submit, text

IDP = "https://idp.example.com"
JWKS = "https://keys.example.com/jwks"
TOOL_AS = "https://tool-as.example.com"


def page_path(setup) -> str:
    return f"/domains/{setup.domain.id}/trusted_issuers"


def stored(world, setup) -> list[TrustedIssuer]:
    query = select(TrustedIssuer).where(TrustedIssuer.domain_id == setup.domain.id).order_by(TrustedIssuer.id)
    return world.query(query)


def test_an_admin_trusts_an_issuer_adds_an_audience_and_removes_one(client, world, setup, people):
    as_admin(client)
    path = page_path(setup)
    page = get(client, path)
    assert page.status_code == 200 and "No trusted issuers." in text(page)
    assert 'aria-current="page">Trusted issuers</a>' in text(page)
    trusted = submit(client, path, {"issuer": IDP, "jwks_uri": JWKS, "id_jag": "y", "create_users": "y"}, page=page)
    assert trusted.status_code == 303
    added = submit(client, f"{path}/audience", {"audience": TOOL_AS, "client_ids": "agent=agent-there\n"}, page=page)
    assert added.status_code == 303
    idp, tool = stored(world, setup)
    assert (idp.issuer, idp.jwks_uri, idp.subject_tokens, idp.id_jag, idp.create_users) == (
        IDP,
        JWKS,
        False,
        True,
        True,
    )
    assert (tool.issuer, tool.id_jag_audience, tool.client_ids, tool.jwks_uri) == (
        TOOL_AS,
        True,
        {"agent": "agent-there"},
        None,
    )
    listed = text(get(client, path))
    assert f"Issuer {IDP} trusted." in listed and f"ID-JAGs may be issued for {TOOL_AS}." in listed
    assert f"<code>{JWKS}</code>" in listed and "<code>agent-there</code>" in listed
    removal = get(client, f"{path}/{idp.id}/delete")
    assert removal.status_code == 200 and "Its tokens are refused from now on" in text(removal)
    assert submit(client, f"{path}/{idp.id}/delete", {"confirm": "1"}, page=removal).status_code == 303
    assert [row.issuer for row in stored(world, setup)] == [TOOL_AS]
    events = [record.event for record in audit(world, "trusted_issuer.created")]
    assert events == ["trusted_issuer.created", "trusted_issuer.created"]
    [deleted] = audit(world, "trusted_issuer.deleted")
    assert deleted.actor == f"user:{people.admin.id}" and deleted.details["before"]["issuer"] == IDP


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"issuer": IDP, "jwks_uri": JWKS}, "Say what to accept"),
        ({"issuer": IDP, "jwks_uri": JWKS, "subject_tokens": "y", "create_users": "y"}, "needs id_jag"),
        ({"issuer": IDP, "jwks_uri": "https://10.1.2.3/jwks", "id_jag": "y"}, "jwks_uri"),
        ({"issuer": "not a uri", "jwks_uri": JWKS, "id_jag": "y"}, "issuer"),
        ({"issuer": IDP, "id_jag": "y"}, "jwks_uri"),
    ],
    ids=["no flag", "users without id-jags", "private keys", "bad issuer", "no jwks_uri"],
)
def test_bad_input_is_shown_at_its_field_and_nothing_is_stored(client, world, setup, people, data, message):
    as_admin(client)
    answer = submit(client, page_path(setup), data)
    assert answer.status_code in (400, 422) and message in text(answer)
    assert 'class="field-error"' in text(answer) or 'role="alert"' in text(answer)
    assert stored(world, setup) == []


def test_an_audience_needs_ours_equals_theirs_and_a_valid_issuer(client, world, setup, people):
    as_admin(client)
    path, page = f"{page_path(setup)}/audience", get(client, page_path(setup))
    lines = submit(client, path, {"audience": TOOL_AS, "client_ids": "agent agent-there"}, page=page)
    assert lines.status_code == 422 and "OURS=THEIRS" in text(lines)
    bad = submit(client, path, {"audience": "nope"}, page=page)
    assert bad.status_code == 422 and 'id="audience"' in text(bad) and 'class="field-error"' in text(bad)
    assert stored(world, setup) == []


def test_a_form_without_its_csrf_token_changes_nothing(client, world, setup, people):
    as_admin(client)
    answer = submit(client, page_path(setup), {"issuer": IDP, "jwks_uri": JWKS, "id_jag": "y"}, token="stale")
    assert answer.status_code == 400 and "The form expired" in text(answer)
    assert stored(world, setup) == []


def test_support_users_neither_see_nor_change_trusted_issuers(client, world, setup, people):
    as_admin(client, "support@example.com")
    assert "Trusted issuers</a>" not in text(get(client, f"/domains/{setup.domain.id}/applications"))
    assert get(client, page_path(setup)).status_code == 403
    assert (
        submit(client, page_path(setup), {"issuer": IDP, "jwks_uri": JWKS, "id_jag": "y"}, token="x").status_code == 403
    )
    assert stored(world, setup) == []


def application_form(name: str, **extra: str) -> dict[str, str]:
    return {"name": name, "redirect_uris": "https://app.example.com/cb", "scopes": "public", **extra}


def test_an_admin_sets_and_clears_an_applications_token_exchange_policy(client, world, setup, people):
    as_admin(client)
    app = setup.confidential_app
    path = f"/domains/{setup.domain.id}/applications/{app.id}"
    page = get(client, path)
    assert "Not allowed" in text(page) and 'name="token_exchange"' in text(page)
    saved = submit(client, path, application_form(app.name, token_exchange="y", token_exchange_refresh_tokens="y"))
    assert saved.status_code == 303
    [row] = world.query(select(Application).where(Application.id == app.id))
    assert row.token_exchange == {"impersonation": False, "refresh_tokens": True}
    shown = text(get(client, path))
    assert "Allowed; impersonation: No; refresh tokens: Yes" in shown
    # The form shows the policy as it is: the refresh-token box ticked, the impersonation one not.
    assert re.search(r'<input checked id="token_exchange_refresh_tokens"', shown)
    assert re.search(r'<input id="token_exchange_impersonation"', shown)
    [record] = audit(world, "application.updated")
    assert record.details["after"]["token_exchange"] == {"impersonation": False, "refresh_tokens": True}
    cleared = submit(client, path, application_form(app.name))
    assert cleared.status_code == 303
    [row] = world.query(select(Application).where(Application.id == app.id))
    assert row.token_exchange is None


def test_token_exchange_is_for_confidential_applications_and_its_options_need_it(client, world, setup, people):
    as_admin(client)
    public = f"/domains/{setup.domain.id}/applications/{setup.public_app.id}"
    refused = submit(client, public, application_form(setup.public_app.name, token_exchange="y"))
    assert refused.status_code == 422 and 'class="field-error"' in text(refused)
    confidential = f"/domains/{setup.domain.id}/applications/{setup.confidential_app.id}"
    orphan = submit(client, confidential, application_form("Confidential", token_exchange_impersonation="y"))
    assert orphan.status_code == 422 and "allow it too" in text(orphan)
    rows = world.query(select(Application).where(Application.domain_id == setup.domain.id))
    assert all(row.token_exchange is None for row in rows)
