"""SAML responses our ACS refuses: bad signatures, wrong conditions, wrapped assertions, replays, unsolicited
answers (unless the provider allows them), another provider's flow, and garbage.

Each is a 400 page, signs nobody in, creates nobody, and is audited with its reason.
"""

from __future__ import annotations

import pytest
import requests
from sqlalchemy import select

from authsvc.core.models import ExternalIdentity, User
from tests.helpers import headers
from tests.helpers.saml import (
    audit_events,
    create_saml,
    introduce,
    needs_xmlsec,
    post_from_idp,
    read_form,
    refusal_reasons,
    sign_in,
    to_idp,
)

pytestmark = needs_xmlsec


@pytest.fixture
def unsolicited_provider(client, runner, setup, idp):
    """A provider that accepts responses nobody asked for (IdP-initiated sign-in), introduced to the IdP."""
    created = create_saml(
        runner, "--metadata-url", idp.url + "/metadata", "--allow-private-network", "--allow-unsolicited"
    )
    introduce(client, idp, created)
    return created


def idp_initiated(idp, provider, **kwargs):
    """The form the IdP's own start page (IdP-initiated sign-in) hands the browser to post to our ACS."""
    url = idp.initiate_url(provider["entity_id"], provider["callback_url"], **kwargs)
    return read_form(requests.get(url, timeout=10).text)


def assert_refused(posted, world, reason: str) -> None:
    assert posted.status_code == 400, posted.get_data(as_text=True)
    assert "Sign-in refused" in posted.get_data(as_text=True)
    assert world.query(select(User).where(User.email.in_(["ada@example.com", "mallory@example.com"]))) == []
    assert world.query(select(ExternalIdentity)) == []
    assert refusal_reasons(world)[-1] == reason


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("unsigned", "signature"),
        ("tampered", "signature"),
        ("other_key", "signature"),
        ("expired", "expired"),
        ("not_yet_valid", "expired"),
        ("wrong_audience", "audience"),
        ("wrong_destination", "destination"),
        ("wrong_recipient", "recipient"),
        ("no_in_response_to", "in_response_to"),
        ("foreign_in_response_to", "in_response_to"),
        ("wrapped_first", "assertion_count"),
        ("wrapped_advice", "signature"),
    ],
)
def test_a_bad_response_is_refused(app, client, world, idp, saml_provider, fault, reason):
    idp.fault = fault
    posted, _ = sign_in(app, client, idp, saml_provider["id"])
    assert_refused(posted, world, reason)


def test_a_replayed_response_is_refused(app, client, world, idp, saml_provider):
    _, (action, fields) = to_idp(client, saml_provider["id"])
    first = post_from_idp(app, idp, action, fields)
    assert first.status_code == 303
    again = post_from_idp(app, idp, action, fields)
    assert again.status_code == 400
    assert refusal_reasons(world) == ["unsolicited"]


def test_a_replayed_unsolicited_assertion_is_refused_by_its_id(app, world, idp, unsolicited_provider):
    action, fields = idp_initiated(idp, unsolicited_provider)
    first = post_from_idp(app, idp, action, fields)
    assert first.status_code == 303, first.get_data(as_text=True)
    again = post_from_idp(app, idp, action, fields)
    assert again.status_code == 400
    assert refusal_reasons(world) == ["replayed"]


def test_an_unsolicited_response_is_refused_unless_the_provider_allows_it(app, client, world, idp, saml_provider):
    action, fields = idp_initiated(idp, saml_provider)
    assert_refused(post_from_idp(app, idp, action, fields), world, "unsolicited")


def test_an_allowed_unsolicited_response_signs_in_and_ignores_a_url_relay_state(
    app, client, world, idp, unsolicited_provider
):
    action, fields = idp_initiated(idp, unsolicited_provider, relay_state="https://evil.example.com/")
    posted = post_from_idp(app, idp, action, fields)
    assert posted.status_code == 303
    finished = client.get(posted.headers["Location"], headers=headers())
    assert finished.status_code == 303
    assert "evil.example.com" not in finished.headers["Location"]
    assert audit_events(world, "saml.signin")[0].details["solicited"] is False


def test_a_response_to_another_providers_flow_is_refused(app, client, runner, world, setup, idp, saml_provider):
    other = create_saml(runner, "--metadata-url", idp.url + "/metadata", "--allow-private-network")
    _, (action, fields) = to_idp(client, saml_provider["id"])
    elsewhere = action.replace(saml_provider["id"], other["id"])
    assert_refused(post_from_idp(app, idp, elsewhere, fields), world, "relay_state")


def test_garbage_at_the_acs_is_a_400_not_a_500(app, client, world, idp, saml_provider):
    _, (action, fields) = to_idp(client, saml_provider["id"])
    for garbage in ("", "not base64!", "PHg+PC94Pg==", "A" * 10):
        posted = post_from_idp(app, idp, action, {**fields, "SAMLResponse": garbage})
        assert posted.status_code == 400
    assert world.query(select(User).where(User.email == "ada@example.com")) == []
