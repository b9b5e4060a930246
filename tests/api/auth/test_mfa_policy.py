"""A domain's multi-factor policy (off, admins, all) and resets of a user's factors, through the CLI, the
admin API and the console: who must enrol before any session, and what a reset ends."""

from __future__ import annotations

import json

from sqlalchemy import select

from authsvc.core.models import AuditRecord, Domain, MfaFactor, RecoveryCode, User
from tests.helpers import HOST, PASSWORD, headers
from tests.helpers.mfa import (
    fresh_code,
    mfa_token,
    page_mfa_token,
    recovery_codes,
    second_step,
    signin_password,
    totp_code,
    totp_secret,
)

# The policy
from tests.helpers.pages import csrf_token, submit_login

# The policy


def test_policy_admins_sends_an_admin_to_enrolment_before_any_session(client, setup, world, runner):
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    result = runner.invoke(args=["mfa", "policy", "--domain", HOST, "--require", "admins"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"domain": HOST, "require": "admins"}
    api = signin_password(client, "admin@example.com")
    assert api.status_code == 401
    assert api.get_json()["error"] == "mfa_enrolment_required"
    assert signin_password(client, "person@example.com").status_code == 202, "the policy covers admins only"
    client.delete_cookie("user", domain=HOST)
    page = submit_login(client, email="admin@example.com", next_url="/auth/admin/")
    assert page.status_code == 200
    assert "Set up an authenticator app" in page.get_data(as_text=True)
    assert client.get_cookie("user", domain=HOST) is None
    token = page_mfa_token(page)
    done = client.post(
        "/auth/login/mfa/enrol",
        data={"csrf_token": csrf_token(page), "mfa_token": token, "code": totp_code(totp_secret(page))},
        headers=headers(),
    )
    assert done.status_code == 200
    assert len(recovery_codes(done)) == 10
    assert client.get("/auth/admin/", headers=headers()).status_code == 200, "enrolled: the console opens"
    assert [r.mfa_require for r in world.query(select(Domain))] == ["admins"]
    assert admin.id in [u.id for u in world.query(select(User).where(User.admin.is_(True)))]


def test_under_the_policy_a_console_session_without_the_factor_is_refused(client, setup, world, runner):
    world.user(setup.domain, "admin@example.com", admin=True)
    assert signin_password(client, "admin@example.com").status_code == 202
    assert client.get("/auth/admin/", headers=headers()).status_code == 200
    runner.invoke(args=["mfa", "policy", "--domain", HOST, "--require", "admins"])
    answer = client.get("/auth/admin/", headers=headers())
    assert answer.status_code == 303
    assert answer.headers["Location"].endswith("/auth/mfa/totp"), "an admin without a factor enrols first"


def test_service_accounts_keep_the_password_grant_but_not_the_console(client, setup, world, runner):
    world.update(User, setup.service.id, admin=True)
    runner.invoke(args=["mfa", "policy", "--domain", HOST, "--require", "all"])
    token = client.post(
        "/auth/oauth/token",
        json={
            "grant_type": "password",
            "username": "service@example.com",
            "password": PASSWORD,
            "client_id": setup.public_app.client_id,
        },
        headers=headers(),
    )
    assert token.status_code == 200, token.get_json()
    assert signin_password(client, "service@example.com").status_code == 202
    assert client.get("/auth/admin/", headers=headers()).status_code == 403


def test_the_policy_command_refuses_an_unknown_value(runner, setup):
    result = runner.invoke(args=["mfa", "policy", "--domain", HOST, "--require", "sometimes"])
    assert result.exit_code != 0
    assert "sometimes" in result.output


# Resets, and the console that sets the policy and resets


def test_an_admin_resets_a_users_factors_and_their_sessions_end(client, setup, world, enrolled):
    secret, _ = enrolled
    token = mfa_token(client)
    second_step(client, token, fresh_code(secret, set()))
    admin = world.user(setup.domain, "admin@example.com", admin=True)
    key = world.api_key(admin, scopes="admin", permission="admin")
    reset = client.post(f"/api/engine/v2/users/{setup.person.id}/mfa/reset", headers=headers(**{"X-API-Key": key}))
    assert reset.status_code == 200, reset.get_json()
    assert reset.get_json() == {"factors_removed": 1}
    assert client.get("/auth/mfa", headers=headers()).status_code == 303, "the user's session ended"
    assert world.query(select(MfaFactor)) == [] and world.query(select(RecoveryCode)) == []
    assert "mfa.reset" in world.query(select(AuditRecord.event))
    assert signin_password(client).status_code == 202


def test_the_cli_resets_a_users_factors(runner, client, setup, world, enrolled):
    result = runner.invoke(args=["mfa", "reset", "--domain", HOST, "--email", "person@example.com"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"id": str(setup.person.id), "factors_removed": 1}
    assert world.query(select(MfaFactor)) == []
    assert [(r.event, r.actor) for r in world.query(select(AuditRecord)) if r.event == "mfa.reset"] == [
        ("mfa.reset", "cli")
    ]


def test_the_console_sets_the_policy_and_resets_a_users_factors(client, setup, world, enrolled):
    world.user(setup.domain, "admin@example.com", admin=True)
    assert signin_password(client, "admin@example.com").status_code == 202
    page = client.get(f"/auth/admin/domains/{setup.domain.id}/mfa", headers=headers())
    assert page.status_code == 200
    saved = client.post(
        f"/auth/admin/domains/{setup.domain.id}/mfa",
        data={"csrf_token": csrf_token(page), "require": "all", "submit": "1"},
        headers=headers(),
    )
    assert saved.status_code == 303
    assert [d.mfa_require for d in world.query(select(Domain))] == ["all"]
    # The admin's own session predates the policy: the console asks for a factor now.
    assert client.get(f"/auth/admin/domains/{setup.domain.id}/mfa", headers=headers()).status_code == 303
    world.update(Domain, setup.domain.id, mfa_require="off")
    confirm = client.get(f"/auth/admin/domains/{setup.domain.id}/users/{setup.person.id}/mfa/reset", headers=headers())
    assert confirm.status_code == 200
    done = client.post(
        f"/auth/admin/domains/{setup.domain.id}/users/{setup.person.id}/mfa/reset",
        data={"csrf_token": csrf_token(confirm), "submit": "1"},
        headers=headers(),
    )
    assert done.status_code == 303
    assert world.query(select(MfaFactor)) == []
    events = world.query(select(AuditRecord.event))
    assert "domain.mfa_policy_changed" in events and "mfa.reset" in events
