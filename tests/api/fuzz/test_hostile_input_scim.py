"""Hostile input to SCIM, property-based: generated bodies, filters, paging and ids sent with a valid
`scim` credential to every SCIM write and search get a SCIM answer below 500 and no stack trace.

The generators reach for the classes of input that were faults once (docs/scim.md, "Errors"): lone
surrogates and NUL in any string, integers past any database column, NaN and infinities, empty
lists and objects, nulls, and now and then a valid value so that one bad field gets far.
"""

from __future__ import annotations

import json
from urllib.parse import quote, urlencode

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import fuzz_examples
from tests.helpers.scim import GROUP_SCHEMA, MEDIA_TYPE, PATCH_SCHEMA, USER_SCHEMA

UNSTORABLE = st.sampled_from(["\x00", "\ud800", "\udbff", "\udc00", "\udfff"])
TEXT = st.text(max_size=20) | st.tuples(st.text(max_size=10), UNSTORABLE, st.text(max_size=10)).map("".join)
HUGE = st.sampled_from([2**31, 2**63, 10**30, -(2**63) - 1]) | st.integers()
NUMBERS = HUGE | st.floats(allow_nan=True, allow_infinity=True)
LEAVES = st.none() | st.booleans() | NUMBERS | TEXT | st.just([]) | st.just({})
ANY_JSON = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=6
)
# A digit string past the database's integers, or a digit int() reads as another ("١").
ID_TEXT = HUGE.map(str) | st.sampled_from(["²", "١", "0", "-1", "1e3", ""]) | TEXT

USER_FIELDS = {
    "userName": st.sampled_from(["ada@example.com", "alice@corp.local"]),
    "displayName": st.just("Ada"),
    "externalId": st.just("e-1"),
    "active": st.booleans(),
    "title": st.just("Countess"),
    "name": st.just({"givenName": "Ada"}),
    "emails": st.just([{"value": "ada@example.com", "primary": True}]),
    "phoneNumbers": st.just([{"value": "+44 20 0000 0000"}]),
}
GROUP_FIELDS = {"displayName": st.just("Staff"), "externalId": st.just("g-1"), "members": st.just([])}
PATHS = ["userName", "displayName", "externalId", "active", "title", "name.givenName", "emails", "members", None]
EXAMPLES = fuzz_examples(12)


@st.composite
def _resources(draw: st.DrawFn, schema: str, fields: dict) -> dict:
    body = {"schemas": [schema]}
    for name in draw(st.sets(st.sampled_from(sorted(fields)))):
        body[name] = draw(fields[name])
    for name in draw(st.lists(st.sampled_from(sorted(fields)), max_size=3)):
        body[name] = draw(ANY_JSON)
    return body


@st.composite
def _patches(draw: st.DrawFn) -> dict:
    operations = []
    for _ in range(draw(st.integers(0, 3))):
        operation: dict = {"op": draw(st.sampled_from(["add", "replace", "remove", "Add", "Remove", "x"]))}
        path = draw(st.sampled_from(PATHS) | TEXT)
        if path is not None:
            operation["path"] = path
        if draw(st.booleans()):
            member = st.fixed_dictionaries({"value": ID_TEXT.map(str) | ANY_JSON, "$ref": st.none() | TEXT})
            operation["value"] = draw(ANY_JSON | st.lists(member, max_size=2))
        operations.append(operation)
    return {"schemas": [PATCH_SCHEMA], "Operations": draw(st.just(operations) | ANY_JSON)}


@st.composite
def _searches(draw: st.DrawFn) -> dict:
    attribute = draw(st.sampled_from(["userName", "id", "externalId", "members.value", "meta.created", "title"]))
    value = draw(st.one_of(TEXT.map(json.dumps), HUGE.map(str), HUGE.map(lambda n: f'"{n}"')))
    op = draw(st.sampled_from(["eq", "ne", "co", "sw", "gt", "le"]))
    query = {"filter": f"{attribute} {op} {value}", "startIndex": draw(NUMBERS), "count": draw(NUMBERS)}
    return {key: item for key, item in query.items() if draw(st.booleans())}


def _sweep(send, bodies) -> None:
    @given(body=bodies)
    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def answers_cleanly(body):
        response = send(body)
        data = response.get_data()
        assert response.status_code < 500, (body, data[:300])
        assert b"Traceback" not in data
        if response.status_code != 204:
            assert response.mimetype == MEDIA_TYPE, (body, response.mimetype)

    answers_cleanly()


def _raw(body: object) -> str:
    # allow_nan: json.dumps writes NaN and Infinity, which Python's json.loads (and so the service) reads.
    return json.dumps(body)


def test_user_writes_answer_generated_bodies_without_a_500(scim):
    user = scim.create_user("bob@example.com")

    def send(body):
        method, path = body[0]
        return scim.send(method, path.format(id=user["id"]), _raw(body[1]))

    targets = st.sampled_from([("POST", "/Users"), ("PUT", "/Users/{id}")])
    _sweep(send, st.tuples(targets, _resources(USER_SCHEMA, USER_FIELDS)))


def test_group_writes_answer_generated_bodies_without_a_500(scim):
    user = scim.create_user("bob@example.com")
    group = scim.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "Base"}).get_json()
    fields = {**GROUP_FIELDS, "members": st.lists(st.fixed_dictionaries({"value": ID_TEXT | st.just(user["id"])}))}

    def send(body):
        method, path = body[0]
        return scim.send(method, path.format(id=group["id"]), _raw(body[1]))

    targets = st.sampled_from([("POST", "/Groups"), ("PUT", "/Groups/{id}")])
    _sweep(send, st.tuples(targets, _resources(GROUP_SCHEMA, fields)))


def test_patches_answer_generated_operations_without_a_500(scim):
    user = scim.create_user("bob@example.com")
    group = scim.post("/Groups", {"schemas": [GROUP_SCHEMA], "displayName": "Base"}).get_json()

    def send(body):
        path, patch = body
        return scim.send("PATCH", path, _raw(patch))

    paths = st.sampled_from([f"/Users/{user['id']}", f"/Groups/{group['id']}"])
    _sweep(send, st.tuples(paths, _patches()))


def test_searches_paging_and_ids_answer_without_a_500(scim):
    scim.create_user("bob@example.com")

    def send(body):
        kind, resource, query = body
        if kind == "list":
            # A lone surrogate's bytes, percent-encoded: what a client can put in a query string.
            encoded = {key: str(value).encode("utf-8", "surrogatepass") for key, value in query.items()}
            return scim.get(f"/{resource}", query_string=urlencode(encoded))
        if kind == "search":
            return scim.send("POST", f"/{resource}/.search", _raw(query))
        return scim.send(kind, f"/{resource}/{query.get('id', '')}")

    # Percent-encoded bytes, lone surrogates and NUL included: what a client can put in a path.
    ids = ID_TEXT.filter(bool).map(lambda text: {"id": quote(text.encode("utf-8", "surrogatepass"), safe="")})
    lists = st.tuples(st.sampled_from(["list", "search"]), st.sampled_from(["Users", "Groups"]), _searches())
    reads = st.tuples(st.sampled_from(["GET", "DELETE"]), st.sampled_from(["Users", "Groups"]), ids)
    _sweep(send, lists | reads)
