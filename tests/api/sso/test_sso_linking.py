"""Which local account a single sign-on reaches (docs/sso.md).

A verified e-mail, or one from a provider trusted for e-mail, links a first sign-in to an existing
ordinary account; match rules keep everyone else out. No automatic link reaches a privileged account, one
that trusts another provider, or a second identity at the same provider: those are linked by the account
holder, signed in, or by a system admin. Every link is audited and records how it was made.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
import requests
from sqlalchemy import select

from authsvc.core import store
from authsvc.core.models import ExternalIdentity, User
from tests.fakes.providers import Provider
from tests.helpers import HOST, headers
from tests.helpers.sso import PERSON, api, create_provider, sign_in

# Linking by e-mail at the first sign-in


def test_a_verified_email_links_the_existing_user(client, world, setup, oidc, oidc_id):
    oidc.sign_in_as(sub="ext-1", email="person@example.com", email_verified=True)
    _, callback = sign_in(client, oidc_id)
    assert callback.status_code == 303
    [identity] = world.query(select(ExternalIdentity))
    assert identity.user_id == setup.person.id


def test_an_unverified_email_does_not_take_over_an_existing_user(client, world, setup, oidc, oidc_id):
    oidc.sign_in_as(sub="ext-1", email="person@example.com")
    _, callback = sign_in(client, oidc_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=email_in_use"
    assert world.query(select(ExternalIdentity)) == []
    assert client.get_cookie("user", domain=HOST) is None


def test_trust_email_links_an_unverified_email(client, world, runner, setup, oauth2):
    oauth2.sign_in_as(id="u-1", email="person@example.com")
    provider_id = create_provider(
        runner,
        "--authorize-url",
        oauth2.url + "/authorize",
        "--token-url",
        oauth2.url + "/token",
        "--userinfo-url",
        oauth2.url + "/userinfo",
        "--trust-email",
    )["id"]
    _, callback = sign_in(client, provider_id)
    assert callback.status_code == 303
    assert world.query(select(ExternalIdentity))[0].user_id == setup.person.id


def test_match_rules_refuse_accounts_outside_them(client, world, runner, setup, oidc):
    provider_id = create_provider(runner, "--issuer", oidc.url, "--match", "email_domain=corp.example")["id"]
    _, callback = sign_in(client, provider_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=not_allowed"
    oidc.sign_in_as(**{**PERSON, "email": "ada@corp.example"})
    assert sign_in(client, provider_id)[1].status_code == 303


def test_every_automatic_link_is_audited(client, world, setup, oidc, oidc_id):
    from authsvc.core.models import AuditRecord

    sign_in(client, oidc_id)
    oidc.sign_in_as(sub="ext-1", email="person@example.com", email_verified=True)
    client.delete_cookie("user", domain=HOST)
    sign_in(client, oidc_id)
    linked = world.query(select(AuditRecord).where(AuditRecord.event == "sso.linked").order_by(AuditRecord.id))
    assert [(r.actor, r.details) for r in linked] == [
        (f"sso:{oidc_id}", {"provider": oidc_id, "via": "new_user"}),
        (f"sso:{oidc_id}", {"provider": oidc_id, "via": "email"}),
    ]
    assert linked[1].target == f"user:{setup.person.id}"


def test_each_identity_records_how_it_was_linked(client, world, setup, oidc, oidc_id):
    sign_in(client, oidc_id)
    client.delete_cookie("user", domain=HOST)
    oidc.sign_in_as(sub="ext-1", email="person@example.com", email_verified=True)
    sign_in(client, oidc_id)
    rows = world.query(select(ExternalIdentity).order_by(ExternalIdentity.id))
    assert [(i.subject, i.via) for i in rows] == [("ext-42", "new_user"), ("ext-1", "email")]


# No automatic link reaches a privileged account


def test_a_domain_admins_provider_cannot_sign_in_as_a_system_admin(on_premises_app, world, setup, oidc):
    from authsvc.core.models import AuditRecord

    root = world.user(setup.domain, "root@example.com", admin=True, system_admin=True)
    domain_admin = world.user(setup.domain, "tenant-admin@example.com", admin=True)
    client = on_premises_app.test_client()
    body = {"name": "Mine", "client_id": "authsvc", "client_secret": "provider-secret", "issuer": oidc.url}
    created = api(client, "post", "/sso", world.api_key(domain_admin, scopes="public admin", permission="admin"), body)
    assert created.status_code == 201, created.get_json()
    oidc.sign_in_as(sub="attacker", email="root@example.com", email_verified=True)
    _, callback = sign_in(client, created.get_json()["id"])
    assert callback.status_code == 303
    assert callback.headers["Location"] == "/auth/login?sso_error=link_required"
    assert client.get_cookie("user", domain=HOST) is None
    assert world.query(select(ExternalIdentity)) == []
    [refused] = world.query(select(AuditRecord).where(AuditRecord.event == "sso.link_refused"))
    assert refused.target == f"user:{root.id}"
    assert refused.details["reason"] == "privileged_account"
    page = client.get(callback.headers["Location"], headers=headers()).get_data(as_text=True)
    assert "cannot be linked by signing in" in page


@pytest.mark.parametrize("flag", ["admin", "support", "service_account"])
def test_a_first_sign_in_never_links_itself_to_a_privileged_account(client, world, setup, oidc, oidc_id, flag):
    world.user(setup.domain, "holder@example.com", **{flag: True})
    oidc.sign_in_as(sub="ext-9", email="holder@example.com", email_verified=True)
    _, callback = sign_in(client, oidc_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=link_required"
    assert world.query(select(ExternalIdentity)) == []


def test_a_first_sign_in_never_takes_an_account_that_trusts_another_provider(
    client, world, runner, setup, oidc, oidc_id
):
    from authsvc.core.models import AuditRecord

    sign_in(client, oidc_id)
    client.delete_cookie("user", domain=HOST)
    with Provider("oidc") as second:
        second.sign_in_as(sub="other-1", **{k: v for k, v in PERSON.items() if k != "sub"})
        other_id = create_provider(runner, "--issuer", second.url)["id"]
        _, callback = sign_in(client, other_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=link_required"
    assert [i.provider_id for i in world.query(select(ExternalIdentity))] == [oidc_id]
    refused = world.query(select(AuditRecord).where(AuditRecord.event == "sso.link_refused"))
    reasons = [r.details["reason"] for r in refused]
    assert reasons == ["linked_to_another_provider"]


def test_a_second_account_at_the_same_provider_is_not_linked_by_email(client, world, setup, oidc, oidc_id):
    from authsvc.core.models import AuditRecord

    oidc.sign_in_as(sub="ext-1", email="person@example.com", email_verified=True)
    sign_in(client, oidc_id)
    client.delete_cookie("user", domain=HOST)
    oidc.sign_in_as(sub="ext-2", email="person@example.com", email_verified=True)
    _, callback = sign_in(client, oidc_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=link_required"
    assert client.get_cookie("user", domain=HOST) is None
    assert [i.subject for i in world.query(select(ExternalIdentity))] == ["ext-1"]
    [refused] = world.query(select(AuditRecord).where(AuditRecord.event == "sso.link_refused"))
    assert refused.details["reason"] == "already_linked"


@pytest.mark.parametrize("flag", ["admin", "support", "system_admin"])
def test_a_user_promoted_after_an_automatic_link_must_link_again_before_sso_signs_them_in(
    client, app, world, setup, oidc, oidc_id, flag
):
    from authsvc.core.models import AuditRecord
    from tests.helpers import signin

    oidc.sign_in_as(sub="ext-1", email="person@example.com", email_verified=True)
    assert sign_in(client, oidc_id)[1].status_code == 303  # linked by e-mail while an ordinary user
    client.delete_cookie("user", domain=HOST)
    world.update(User, setup.person.id, **{flag: True})
    _, callback = sign_in(client, oidc_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=link_required"
    assert client.get_cookie("user", domain=HOST) is None
    [refused] = world.query(select(AuditRecord).where(AuditRecord.event == "sso.link_refused"))
    assert (refused.target, refused.details["reason"]) == (f"user:{setup.person.id}", "automatic_link")
    # The account holder's own step makes the link theirs; then the provider signs them in again.
    signin(client)
    assert link(client, oidc_id).status_code == 303
    [identity] = world.query(select(ExternalIdentity))
    assert (identity.user_id, identity.via) == (setup.person.id, "user")
    fresh = app.test_client()
    assert sign_in(fresh, oidc_id)[1].status_code == 303
    assert fresh.get_cookie("user", domain=HOST) is not None


# Links made by the account holder, or by a system admin


def link(client, provider_id, *, confirm=True):
    """A signed-in user asks to link: the confirmation page, its form, the provider, our callback."""
    from tests.helpers.pages import csrf_token

    page = client.get("/auth/oauth2/link", query_string={"id": provider_id}, headers=headers())
    assert page.status_code == 200, page.get_data(as_text=True)
    start = client.post(
        "/auth/oauth2/link", data={"csrf_token": csrf_token(page), "id": provider_id}, headers=headers()
    )
    assert start.status_code == 303, start.get_data(as_text=True)
    back = urlsplit(requests.get(start.headers["Location"], allow_redirects=False, timeout=10).headers["Location"])
    return client.get(back.path, query_string=back.query, headers=headers())


def test_a_signed_in_system_admin_links_their_own_identity(client, world, setup, oidc, oidc_id, app):
    from authsvc.core.models import AuditRecord
    from tests.helpers import signin

    root = world.user(setup.domain, "root@example.com", admin=True, system_admin=True)
    oidc.sign_in_as(sub="root-at-idp", email="someone-else@example.com")
    signin(client, "root@example.com")
    callback = link(client, oidc_id)
    assert callback.status_code == 303
    [identity] = world.query(select(ExternalIdentity))
    assert (identity.user_id, identity.subject) == (root.id, "root-at-idp")
    [linked] = world.query(select(AuditRecord).where(AuditRecord.event == "sso.linked"))
    assert (linked.actor, linked.target, linked.details["via"]) == (f"user:{root.id}", f"user:{root.id}", "user")
    # From now on the provider signs them in.
    fresh = app.test_client()
    assert sign_in(fresh, oidc_id)[1].status_code == 303
    assert fresh.get_cookie("user", domain=HOST) is not None


def test_a_link_is_never_started_by_a_plain_get(client, app, world, setup, oidc, oidc_id):
    from tests.helpers import signin

    signin(client)
    page = client.get("/auth/oauth2/link", query_string={"id": oidc_id}, headers=headers())
    assert page.status_code == 200 and "Link sign-in with Corp" in page.get_data(as_text=True)
    with app.app_context():
        assert store.client().keys("authsvc:sso:*") == []
    forged = client.post("/auth/oauth2/link", data={"id": oidc_id}, headers=headers())
    assert forged.status_code in (400, 403)
    with app.app_context():
        assert store.client().keys("authsvc:sso:*") == []


def test_a_link_without_a_session_goes_to_sign_in(client, oidc_id):
    response = client.get("/auth/oauth2/link", query_string={"id": oidc_id}, headers=headers())
    assert response.status_code == 303
    assert response.headers["Location"].startswith("/auth/login?continue=")


def test_a_link_finished_by_another_session_links_nobody(client, world, setup, oidc, oidc_id):
    from tests.helpers import signin
    from tests.helpers.pages import csrf_token

    signin(client)
    page = client.get("/auth/oauth2/link", query_string={"id": oidc_id}, headers=headers())
    start = client.post("/auth/oauth2/link", data={"csrf_token": csrf_token(page), "id": oidc_id}, headers=headers())
    back = urlsplit(requests.get(start.headers["Location"], allow_redirects=False, timeout=10).headers["Location"])
    client.delete_cookie("user", domain=HOST)
    callback = client.get(back.path, query_string=back.query, headers=headers())
    assert callback.status_code == 400
    assert world.query(select(ExternalIdentity)) == []


def test_an_identity_linked_to_someone_else_is_not_moved_by_a_link(client, app, world, setup, oidc, oidc_id):
    from tests.helpers import signin

    sign_in(app.test_client(), oidc_id)  # Ada's account at the provider is Ada's here
    signin(client)
    callback = link(client, oidc_id)
    assert callback.headers["Location"] == "/auth/login?sso_error=identity_in_use"
    [identity] = world.query(select(ExternalIdentity))
    assert identity.user_id != setup.person.id


def test_only_a_system_admin_links_an_identity_through_the_admin_api(client, world, setup, oidc_id):
    from authsvc.core.models import AuditRecord
    from tests.helpers import OTHER_HOST

    root_here = world.user(setup.domain, "root@example.com", admin=True, system_admin=True)
    domain_admin = world.user(setup.domain, "tenant-admin@example.com", admin=True)
    body = {"provider": oidc_id, "subject": "root-at-idp"}
    path = f"/users/{root_here.id}/identities"
    domain_admin_key = world.api_key(domain_admin, scopes="public admin", permission="admin")
    refused = api(client, "post", path, domain_admin_key, body)
    assert refused.status_code == 403 and refused.get_json()["error"] == "forbidden"
    system = world.user(world.domain(OTHER_HOST), "system@example.com", admin=True, system_admin=True)
    system_key = world.api_key(system, scopes="public admin", permission="admin")
    linked = api(client, "post", path, system_key, body, host=OTHER_HOST)
    assert linked.status_code == 201, linked.get_json()
    assert linked.get_json() == {"user": str(root_here.id), "provider": oidc_id, "subject": "root-at-idp"}
    [record] = world.query(select(AuditRecord).where(AuditRecord.event == "sso.linked"))
    assert record.details["via"] == "system_admin" and record.target == f"user:{root_here.id}"
    taken = api(client, "post", f"/users/{setup.person.id}/identities", system_key, body, host=OTHER_HOST)
    assert taken.status_code == 409
