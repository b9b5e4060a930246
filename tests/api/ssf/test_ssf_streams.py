"""Stream management (SSF 1.0 8.1) for a receiver with the reserved `ssf` scope: the configuration document
per domain, create, read, update, replace, delete, status, subjects and verification; every refusal in
RFC 8935's error shape ({"err", "description"}) with its status, never a 500."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from authsvc.core.models import AuditRecord
from tests.helpers import OTHER_HOST, headers
from tests.helpers.ssf import (
    ACCOUNT_DISABLED,
    ALL_EVENTS,
    POLL,
    PUSH,
    SESSION_REVOKED,
    assert_ssf_error,
    bearer,
    receiver_token,
)

STREAMS = "/ssf/streams"


def create(client, token: str, body: dict | None = None):
    return client.post(
        STREAMS, json=body if body is not None else {"events_requested": ALL_EVENTS}, headers=bearer(token)
    )


def test_the_configuration_document_names_every_endpoint_under_the_domains_issuer(client, setup, world):
    document = client.get("/.well-known/ssf-configuration", headers=headers()).get_json()
    issuer = "https://auth.example.com"
    assert document["issuer"] == issuer and document["spec_version"] == "1_0"
    assert document["jwks_uri"] == f"{issuer}/auth/oauth/jwks"
    assert document["delivery_methods_supported"] == [PUSH, POLL]
    for name in (
        "configuration_endpoint",
        "status_endpoint",
        "add_subject_endpoint",
        "remove_subject_endpoint",
        "verification_endpoint",
    ):
        assert document[name].startswith(issuer + "/ssf/")
    assert document["authorization_schemes"] == [{"spec_urn": "urn:ietf:rfc:6749"}]
    assert document["default_subjects"] == "ALL"
    world.domain(host=OTHER_HOST)
    other = client.get("/.well-known/ssf-configuration", headers=headers(OTHER_HOST)).get_json()
    assert other["issuer"] == f"https://{OTHER_HOST}"


def test_a_receiver_creates_reads_updates_replaces_and_deletes_its_stream(client, setup, receiving, world):
    made = create(
        client,
        receiving.token,
        {"events_requested": [SESSION_REVOKED, "urn:example:unknown"], "description": "the SIEM"},
    )
    assert made.status_code == 201, made.get_json()
    stream = made.get_json()
    assert stream["iss"] == "https://auth.example.com" and stream["aud"] == receiving.client_id
    assert stream["events_requested"] == [SESSION_REVOKED, "urn:example:unknown"]
    assert stream["events_delivered"] == [SESSION_REVOKED]
    assert set(stream["events_supported"]) == set(ALL_EVENTS)
    # Polled unless it says push: the poll endpoint is the transmitter's.
    assert stream["delivery"] == {
        "method": POLL,
        "endpoint_url": f"https://auth.example.com/ssf/poll/{stream['stream_id']}",
    }
    sid = stream["stream_id"]
    assert client.get(STREAMS, query_string={"stream_id": sid}, headers=bearer(receiving.token)).get_json() == stream
    assert client.get(STREAMS, headers=bearer(receiving.token)).get_json() == [stream]
    patched = client.patch(
        STREAMS, json={"stream_id": sid, "events_requested": [ACCOUNT_DISABLED]}, headers=bearer(receiving.token)
    )
    assert patched.status_code == 200
    assert patched.get_json()["events_delivered"] == [ACCOUNT_DISABLED]
    assert patched.get_json()["description"] == "the SIEM"  # PATCH keeps what it does not name
    push = {"method": PUSH, "endpoint_url": "http://127.0.0.1:9/events", "authorization_header": "Bearer s3cret"}
    replaced = client.put(
        STREAMS,
        json={"stream_id": sid, "events_requested": ALL_EVENTS, "delivery": push},
        headers=bearer(receiving.token),
    )
    assert replaced.status_code == 200
    assert replaced.get_json()["delivery"] == {"method": PUSH, "endpoint_url": "http://127.0.0.1:9/events"}
    assert "description" not in replaced.get_json()  # PUT replaces all of it
    assert "s3cret" not in replaced.get_data(as_text=True)
    records = world.query(select(AuditRecord).where(AuditRecord.event.like("ssf.%")))
    assert [r.event for r in records] == ["ssf.stream_created", "ssf.stream_updated", "ssf.stream_updated"]
    assert all("s3cret" not in str(r.details) for r in records)
    deleted = client.delete(STREAMS, query_string={"stream_id": sid}, headers=bearer(receiving.token))
    assert deleted.status_code == 204
    gone = client.get(STREAMS, query_string={"stream_id": sid}, headers=bearer(receiving.token))
    assert_ssf_error(gone, 404, "not_found")
    assert client.get(STREAMS, headers=bearer(receiving.token)).get_json() == []


def test_the_push_authorization_header_is_stored_encrypted(app, client, setup, receiving, world):
    from authsvc.ssf.models import SsfStream

    push = {"method": PUSH, "endpoint_url": "http://127.0.0.1:9/events", "authorization_header": "Bearer s3cret"}
    assert create(client, receiving.token, {"events_requested": [], "delivery": push}).status_code == 201
    (row,) = world.query(select(SsfStream))
    assert row.authorization_encrypted and "s3cret" not in row.authorization_encrypted


def test_status_is_read_and_set(client, setup, receiving):
    sid = create(client, receiving.token).get_json()["stream_id"]
    read = client.get("/ssf/status", query_string={"stream_id": sid}, headers=bearer(receiving.token))
    assert read.get_json() == {"stream_id": sid, "status": "enabled"}
    paused = client.post(
        "/ssf/status",
        json={"stream_id": sid, "status": "paused", "reason": "maintenance"},
        headers=bearer(receiving.token),
    )
    assert paused.get_json() == {"stream_id": sid, "status": "paused", "reason": "maintenance"}
    read = client.get("/ssf/status", query_string={"stream_id": sid}, headers=bearer(receiving.token))
    assert read.get_json()["status"] == "paused"


def test_without_a_token_it_is_401_and_without_the_scope_403(client, setup, receiving, world):
    assert_ssf_error(client.get(STREAMS, headers=headers()), 401, "authentication_failed")
    assert client.get(STREAMS, headers=headers()).headers["WWW-Authenticate"].startswith("Bearer")
    assert_ssf_error(client.get(STREAMS, headers=bearer("not-a-token")), 401, "authentication_failed")
    application, secret = world.application(
        setup.domain, confidential=True, service_account_id=setup.service.id, redirect_uris=[], scopes="public ssf"
    )
    public_only = receiver_token(client, application.client_id, secret, scope="public")
    assert_ssf_error(create(client, public_only), 403, "access_denied")


def test_a_receiver_never_reaches_another_receivers_stream(client, setup, receiving, world):
    sid = create(client, receiving.token).get_json()["stream_id"]
    application, secret = world.application(
        setup.domain, confidential=True, service_account_id=setup.service.id, redirect_uris=[], scopes="ssf"
    )
    other = receiver_token(client, application.client_id, secret)
    assert client.get(STREAMS, headers=bearer(other)).get_json() == []
    for response in (
        client.get(STREAMS, query_string={"stream_id": sid}, headers=bearer(other)),
        client.patch(STREAMS, json={"stream_id": sid, "events_requested": []}, headers=bearer(other)),
        client.delete(STREAMS, query_string={"stream_id": sid}, headers=bearer(other)),
        client.post("/ssf/status", json={"stream_id": sid, "status": "disabled"}, headers=bearer(other)),
        client.post("/ssf/verify", json={"stream_id": sid}, headers=bearer(other)),
        client.post(f"/ssf/poll/{sid}", json={}, headers=bearer(other)),
    ):
        assert_ssf_error(response, 404, "not_found")


def test_a_second_stream_of_one_receiver_is_409(client, setup, receiving):
    assert create(client, receiving.token).status_code == 201
    assert_ssf_error(create(client, receiving.token), 409, "conflict")


@pytest.mark.parametrize(
    "body",
    [
        [],
        "text",
        {"events_requested": "not a list"},
        {"events_requested": [1, 2]},
        {"events_requested": ["urn:example:e"] * 51},
        {"delivery": {"method": "urn:example:carrier-pigeon"}},
        {"delivery": {"method": PUSH}},
        {"delivery": {"method": PUSH, "endpoint_url": "ftp://example.com/"}},
        {"delivery": {"method": PUSH, "endpoint_url": "https://example.com/", "authorization_header": 7}},
        {"delivery": {"method": PUSH, "endpoint_url": "https://example.com/", "authorization_header": "a\r\nb: c"}},
        {"description": ["x"]},
        {"description": "x" * 501},
    ],
)
def test_a_malformed_stream_is_400(client, setup, receiving, body):
    assert_ssf_error(create(client, receiving.token, body), 400, "invalid_request")


def test_malformed_json_is_400(client, setup, receiving):
    response = client.post(STREAMS, data=b"{not json", content_type="application/json", headers=bearer(receiving.token))
    assert_ssf_error(response, 400, "invalid_request")


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/ssf/status", {"status": "enabled"}),
        ("/ssf/status", {"stream_id": "SID", "status": "asleep"}),
        ("/ssf/status", {"stream_id": "SID", "status": "paused", "reason": 5}),
        ("/ssf/subjects/add", {"stream_id": "SID"}),
        ("/ssf/subjects/add", {"stream_id": "SID", "subject": {"format": "phone_number", "phone_number": "+1"}}),
        ("/ssf/subjects/add", {"stream_id": "SID", "subject": {"format": "email"}}),
        ("/ssf/subjects/add", {"stream_id": "SID", "subject": {"format": "iss_sub", "sub": 5}}),
        ("/ssf/subjects/add", {"stream_id": "SID", "subject": {"format": "opaque", "id": "1"}, "verified": "yes"}),
        ("/ssf/subjects/remove", {"stream_id": "SID", "subject": "person@example.com"}),
        ("/ssf/verify", {"stream_id": "SID", "state": 12}),
        ("/ssf/poll/SID", {"maxEvents": -1}),
        ("/ssf/poll/SID", {"maxEvents": "ten"}),
        ("/ssf/poll/SID", {"ack": "jti"}),
        ("/ssf/poll/SID", {"ack": [1]}),
        ("/ssf/poll/SID", {"setErrs": []}),
        ("/ssf/poll/SID", {"returnImmediately": "no"}),
    ],
)
def test_malformed_requests_of_a_stream_are_400(client, setup, receiving, path, body):
    sid = create(client, receiving.token).get_json()["stream_id"]
    filled = {name: (sid if value == "SID" else value) for name, value in body.items()}
    response = client.post(path.replace("SID", sid), json=filled, headers=bearer(receiving.token))
    assert_ssf_error(response, 400, "invalid_request")


def test_verification_is_at_most_once_each_interval(client, setup, receiving):
    sid = create(client, receiving.token).get_json()["stream_id"]
    assert client.post("/ssf/verify", json={"stream_id": sid}, headers=bearer(receiving.token)).status_code == 204
    again = client.post("/ssf/verify", json={"stream_id": sid}, headers=bearer(receiving.token))
    assert_ssf_error(again, 429, "too_many_requests")


def test_a_receiver_registered_from_the_command_line_as_the_docs_say_creates_its_stream(client, runner, setup):
    """docs/events.md: a confidential application bound to a service account, with the reserved `ssf` scope."""
    import json

    args = ["apps", "create", "--domain", "auth.example.com", "--name", "SIEM", "--confidential"]
    result = runner.invoke(args=[*args, "--service-account", "service@example.com", "--scopes", "ssf"])
    assert result.exit_code == 0, result.output
    made = json.loads(result.stdout)
    token = receiver_token(client, made["client_id"], made["client_secret"])
    assert create(client, token).status_code == 201


def test_dynamic_registration_never_grants_ssf(client, setup, world):
    """A receiver learns of everyone's sessions and accounts: only a domain admin allows an application that."""
    from authsvc.core.models import RegistrationToken
    from tests.helpers.client_registration import METADATA, register

    with world.app.app_context():
        token, value = RegistrationToken.issue(setup.domain.id, expires_in=600, max_uses=2, created_by="test")
    world.save(token)
    assert register(client, value, {**METADATA, "scope": "public"}).status_code == 201
    refused = register(client, value, {**METADATA, "scope": "public ssf"})
    assert refused.status_code == 400 and "ssf" in refused.get_json()["error_description"]
