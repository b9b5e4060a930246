"""The OpenAPI document itself: valid OpenAPI 3.1, every route described, served as the file, and
the file generated from base.json and the admin API's schemas.

That the running app answers as it says: tests/api/fuzz/test_openapi_schemathesis.py (generated requests)
and tests/api/fuzz/test_openapi_answers.py (real ones).
"""

import json
import re

from openapi_spec_validator import validate

from authsvc.openapi import OPENAPI_DOCUMENT
from authsvc.openapi.document import build, generated_schemas, render
from tests.helpers import headers, in_one_pass

# Of the document and the code alone, no database or store: the same on either pass.
files_only = in_one_pass("sqlite")


@files_only
def test_the_document_is_valid_openapi_3_1(document):
    assert document["openapi"].startswith("3.1")
    validate(document)


def test_every_route_of_the_app_is_described(app, document):
    # Static files (the app's "static" and each blueprint's, e.g. "auth.static")
    # are not operations. Flask's <converter:name> is OpenAPI's {name}.
    routes = {
        (re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule), method.lower())
        for rule in app.url_map.iter_rules()
        if rule.endpoint.rpartition(".")[2] != "static"
        # The console's routes are HTML pages for people, not API.
        and not rule.endpoint.startswith("console.")
        # SCIM describes itself (RFC 7644 4: /scim/v2/Schemas, /ResourceTypes; docs/scim.md).
        and not rule.endpoint.startswith("scim.")
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    described = {(path, method) for path, item in document["paths"].items() for method in item}
    assert routes == described


def test_the_served_document_is_the_file(document):
    assert document == json.loads(OPENAPI_DOCUMENT.read_text())


@files_only
def test_the_file_is_generated_from_base_json_and_the_admin_schemas():
    # python -m authsvc.openapi --check: what `make openapi` would write, byte for byte.
    assert OPENAPI_DOCUMENT.read_text() == render(build())


# Components that operations outside the admin API use too stay written by hand in base.json.
SHARED = {"Error", "RevokedTokens", "ResourceToken", "ClearedResourceTokens"}


@files_only
def test_every_admin_body_and_answer_is_a_generated_schema(document):
    generated = generated_schemas()
    used = set()
    for item in document["paths"].values():
        for operation in item.values():
            if "admin" in operation["tags"]:
                used |= set(re.findall(r"#/components/schemas/(\w+)", json.dumps(operation)))
    assert len(used) >= 40
    assert used - SHARED <= set(generated)
    for name in used - SHARED:
        assert document["components"]["schemas"][name] == generated[name]
    # No admin schema is written inside an operation either: every body and answer is a component.
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if "admin" not in operation["tags"]:
                continue
            bodies = [operation.get("requestBody", {})] + list(operation["responses"].values())
            for body in bodies:
                schema = body.get("content", {}).get("application/json", {}).get("schema")
                assert schema is None or set(schema) == {"$ref"}, (method, path, schema)


def test_the_generated_schemas_say_what_the_api_refuses(client, world):
    """A bound in the document is the bound the service applies (both come from one schema)."""
    schemas = generated_schemas()
    name = schemas["ApplicationCreate"]["properties"]["name"]
    assert (name["minLength"], name["maxLength"]) == (1, 200)
    ttl = schemas["ApplicationChange"]["properties"]["access_token_ttl"]["anyOf"][0]
    assert (ttl["minimum"], ttl["maximum"]) == (0, 10 * 365 * 24 * 3600)
    assert schemas["MfaPolicy"]["properties"]["require"]["enum"] == ["off", "admins", "all"]
    assert schemas["UserCreate"]["required"] == ["email"]
    domain = world.domain("localhost")
    admin = world.user(domain, "root@localhost", admin=True)
    key = world.api_key(admin, scopes="public admin", permission="admin")
    body = {"name": "x" * 201, "redirect_uris": ["https://a.example/cb"], "access_token_ttl": 10 * 365 * 24 * 3600 + 1}
    created = client.post("/api/engine/v2/oauth_apps", json=body, headers=headers("localhost", **{"X-API-Key": key}))
    assert created.status_code == 422
    assert set(created.get_json()["fields"]) == {"name", "access_token_ttl"}
