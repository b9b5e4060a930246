"""Hostile input to the SSF transmitter, property-based: generated bodies sent with a valid `ssf` token to
every operation (and query strings to the reads) get an answer below 500 in RFC 8935's error shape when
refused. The generators reach for what faults a store: NUL and lone surrogates, integers past any
column, NaN, nulls, and now and then a valid member so that one bad field gets far."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import fuzz_examples
from tests.helpers.ssf import ACCOUNT_DISABLED, PUSH, bearer

UNSTORABLE = st.sampled_from(["\x00", "\ud800", "\udfff"])
TEXT = st.text(max_size=20) | st.tuples(st.text(max_size=10), UNSTORABLE).map("".join)
HUGE = st.sampled_from([2**31, 2**63, 10**30, -(2**63) - 1]) | st.integers()
LEAVES = st.none() | st.booleans() | HUGE | st.floats(allow_nan=True) | TEXT | st.just([]) | st.just({})
ANY_JSON = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=6
)
SUBJECTS = st.fixed_dictionaries(
    {"format": st.sampled_from(["email", "iss_sub", "opaque"]) | TEXT},
    optional={"email": TEXT, "iss": TEXT, "sub": TEXT | HUGE.map(str), "id": TEXT | HUGE.map(str) | st.just("١")},
)
MEMBERS = {
    "events_requested": st.just([ACCOUNT_DISABLED]) | ANY_JSON,
    "delivery": st.fixed_dictionaries(
        {"method": st.just(PUSH) | TEXT}, optional={"endpoint_url": TEXT, "authorization_header": TEXT | HUGE}
    )
    | ANY_JSON,
    "description": TEXT | ANY_JSON,
    "status": st.sampled_from(["enabled", "paused", "disabled"]) | TEXT,
    "reason": TEXT | ANY_JSON,
    "subject": SUBJECTS | ANY_JSON,
    "verified": st.booleans() | ANY_JSON,
    "state": TEXT | ANY_JSON,
    "ack": st.lists(TEXT, max_size=3) | ANY_JSON,
    "setErrs": st.dictionaries(TEXT, ANY_JSON, max_size=2) | ANY_JSON,
    "maxEvents": HUGE | ANY_JSON,
    "returnImmediately": st.booleans() | ANY_JSON,
}
BODIES = st.fixed_dictionaries({}, optional=MEMBERS) | ANY_JSON
PATHS = ["/ssf/streams", "/ssf/status", "/ssf/subjects/add", "/ssf/subjects/remove", "/ssf/verify", "/ssf/poll/SID"]


def test_generated_bodies_never_get_a_500(client, setup, receiving):
    made = client.post("/ssf/streams", json={"events_requested": []}, headers=bearer(receiving.token))
    sid = made.get_json()["stream_id"]

    @settings(max_examples=fuzz_examples(150), deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        path=st.sampled_from(PATHS),
        method=st.sampled_from(["POST", "PATCH", "PUT"]),
        body=BODIES,
        with_stream=st.booleans(),
    )
    def check(path, method, body, with_stream):
        if isinstance(body, dict) and with_stream:
            body = {**body, "stream_id": sid}
        method = method if path == "/ssf/streams" else "POST"
        try:
            data = json.dumps(body)
        except ValueError:
            return
        response = client.open(
            path.replace("SID", sid),
            method=method,
            data=data.encode("utf-8", "surrogatepass"),
            content_type="application/json",
            headers=bearer(receiving.token),
        )
        assert response.status_code < 500, (path, body, response.get_data(as_text=True))
        if response.status_code >= 400:
            assert set(response.get_json()) == {"err", "description"}

    check()


def test_generated_query_strings_never_get_a_500(client, setup, receiving):
    @settings(max_examples=fuzz_examples(50), deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        path=st.sampled_from(["/ssf/streams", "/ssf/status"]),
        method=st.sampled_from(["GET", "DELETE"]),
        stream_id=st.text(max_size=20) | HUGE.map(str) | st.just("\x00"),
    )
    def check(path, method, stream_id):
        method = method if path == "/ssf/streams" else "GET"
        response = client.open(
            path, method=method, query_string={"stream_id": stream_id}, headers=bearer(receiving.token)
        )
        assert response.status_code < 500
        assert response.status_code in (400, 404)

    check()
