"""An admin rule's refusal says the same thing on every surface: the admin API, the console and the CLI.

The rules are the admin verbs'; what a refusal says is the one error table's (authsvc.core.errors),
so a person in the console, a script on the API and an operator at the command line read one text
for one violation, with the same status where the surface has one.
"""

from __future__ import annotations

import pytest

from tests.helpers import HOST, PASSWORD
from tests.helpers.admin_api import ADMIN_SCOPES, call
from tests.helpers.console import app_path, as_admin, get, submit, text


@pytest.fixture
def keys(world, people):
    """API keys of the console's admin and support user (tests.helpers.console.people), with the admin scope."""

    class Keys:
        admin_key = world.api_key(people.admin, scopes=ADMIN_SCOPES, permission="admin")
        support_key = world.api_key(people.support, scopes=ADMIN_SCOPES, permission="support")

    return Keys


def _description(response, status: int) -> str:
    assert response.status_code == status
    description = response.get_json()["error_description"]
    assert description
    return description


def test_a_change_support_may_not_make_is_refused_in_the_same_words(client, setup, keys):
    path = f"/oauth_apps/{setup.confidential_app.id}/regenerate"
    refused = _description(call(client, "post", path, keys.support_key), 403)
    page = get(as_admin(client, "support@example.com"), app_path(setup, setup.confidential_app) + "/regenerate")
    assert page.status_code == 403
    assert page.mimetype == "text/html"
    assert refused in text(page)


def test_a_record_that_is_not_there_is_refused_in_the_same_words(client, setup, keys):
    refused = _description(call(client, "get", "/oauth_apps/999999", keys.admin_key), 404)
    page = get(as_admin(client), app_path(setup) + "/999999")
    assert page.status_code == 404
    assert refused in text(page)


def test_a_conflict_is_refused_in_the_same_words(client, setup, keys):
    refused = _description(call(client, "post", f"/oauth_apps/{setup.public_app.id}/regenerate", keys.admin_key), 409)
    page = submit(as_admin(client), app_path(setup, setup.public_app) + "/regenerate")
    assert page.status_code == 409
    assert refused in text(page)


def test_a_conflict_reads_the_same_in_the_api_the_console_and_the_command_line(client, runner, setup, keys):
    """A domain with a public application cannot move to the FAPI 2.0 profile, whoever asks."""
    path = f"/domains/{setup.domain.id}"
    refused = _description(call(client, "patch", path, keys.admin_key, {"profile": "fapi2"}), 409)
    page = submit(as_admin(client), f"{path}/profile", {"profile": "fapi2"})
    assert page.status_code == 409
    assert refused in text(page)
    result = runner.invoke(args=["domains", "update", "--domain", HOST, "--profile", "fapi2"])
    assert result.exit_code != 0
    assert result.stdout == ""
    assert result.stderr.strip() == f"Error: {refused}"


@pytest.mark.parametrize("email", ["person@example.com", "PERSON@example.com"])
def test_a_field_refusal_gives_the_command_line_the_api_fields_reason(client, runner, setup, keys, email):
    body = {"domain": str(setup.domain.id), "email": email, "password": PASSWORD}
    response = call(client, "post", "/users", keys.admin_key, body)
    assert response.status_code == 422
    why = response.get_json()["fields"]["email"]
    result = runner.invoke(args=["users", "create", "--domain", HOST, "--email", email, "--password", PASSWORD])
    assert result.exit_code != 0
    assert result.stdout == ""
    assert result.stderr.strip() == f"Error: --email: {why}"
