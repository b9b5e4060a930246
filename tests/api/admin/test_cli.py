"""The CLI contract (docs/platform.md#command-line): one JSON object on stdout, clear errors, non-zero exit."""

import json

import pytest
from sqlalchemy import select

from authsvc.core import security
from authsvc.core.models import ApiKey, Application, User


def run(runner, *args):
    result = runner.invoke(args=list(args))
    return result, (json.loads(result.stdout) if result.exit_code == 0 else None)


@pytest.fixture
def domain(runner):
    _, out = run(runner, "domains", "create", "--name", "Acme", "--host", "Acme.Example.com")
    return out


def test_domains_create_and_list(runner, domain):
    assert set(domain) == {"id", "name", "host"}
    assert isinstance(domain["id"], str)
    assert domain["host"] == "acme.example.com"
    _, listed = run(runner, "domains", "list")
    assert [d["host"] for d in listed["domains"]] == ["acme.example.com"]


def test_apps_create_public_and_confidential(runner, domain, world):
    _, public = run(
        runner,
        "apps",
        "create",
        "--domain",
        "acme.example.com",
        "--name",
        "Web",
        "--redirect-uri",
        "https://web.example.com/cb",
        "--scopes",
        "public mqtt.read",
    )
    assert set(public) == {"id", "client_id"}
    _, confidential = run(
        runner,
        "apps",
        "create",
        "--domain",
        "acme.example.com",
        "--name",
        "Backend",
        "--redirect-uri",
        "https://b.example.com/cb",
        "--redirect-uri",
        "http://localhost:8080/cb",
        "--confidential",
        "--consent",
        "--require-pkce",
    )
    assert set(confidential) == {"id", "client_id", "client_secret"}
    [stored] = world.query(select(Application).where(Application.client_id == confidential["client_id"]))
    assert stored.client_secret_digest == security.digest(confidential["client_secret"])
    assert stored.redirect_uris == ["https://b.example.com/cb", "http://localhost:8080/cb"]
    assert stored.consent and stored.require_pkce
    _, listed = run(runner, "apps", "list", "--domain", "acme.example.com")
    assert {a["client_id"] for a in listed["apps"]} == {public["client_id"], confidential["client_id"]}
    assert all("client_secret" not in a for a in listed["apps"])


def test_users_create_and_list(runner, domain, world):
    _, user = run(
        runner,
        "users",
        "create",
        "--domain",
        "acme.example.com",
        "--email",
        "Ops@Acme.Example.com",
        "--password",
        "long enough password",
        "--name",
        "Ops",
        "--service-account",
        "--admin",
    )
    assert user["email"] == "ops@acme.example.com"
    [stored] = world.query(select(User))
    assert stored.service_account and stored.admin and not stored.support
    assert stored.password_hash.startswith("$2b$")
    _, listed = run(runner, "users", "list")
    assert listed["users"][0]["email"] == "ops@acme.example.com"
    assert "password_hash" not in listed["users"][0]


def test_api_keys_create_and_list(runner, domain, world):
    run(
        runner,
        "users",
        "create",
        "--domain",
        "acme.example.com",
        "--email",
        "a@acme.example.com",
        "--password",
        "long enough password",
    )
    _, key = run(
        runner,
        "api-keys",
        "create",
        "--domain",
        "acme.example.com",
        "--user",
        "a@acme.example.com",
        "--name",
        "ci",
        "--scopes",
        "public",
    )
    assert key["key"].startswith(key["id"] + ".")
    [stored] = world.query(select(ApiKey))
    assert stored.secret_digest == security.digest(key["key"].split(".", 1)[1])
    _, listed = run(runner, "api-keys", "list")
    assert listed["api_keys"][0]["id"] == key["id"]
    assert key["key"] not in json.dumps(listed)


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["apps", "create", "--domain", "nowhere.example", "--name", "x", "--redirect-uri", "https://x.example/cb"],
            "no domain",
        ),
        (["apps", "create", "--domain", "acme.example.com", "--name", "x", "--redirect-uri", "not a uri"], "URI"),
        (
            [
                "apps",
                "create",
                "--domain",
                "acme.example.com",
                "--name",
                "x",
                "--redirect-uri",
                "https://x.example/cb#f",
            ],
            "fragment",
        ),
        (
            ["apps", "create", "--domain", "acme.example.com", "--name", "x", "--redirect-uri", "javascript:alert(1)"],
            "scheme",
        ),
        (
            ["apps", "create", "--domain", "acme.example.com", "--name", "x", "--redirect-uri", "http://x.example/cb"],
            "http",
        ),
        (
            [
                "apps",
                "create",
                "--domain",
                "acme.example.com",
                "--name",
                "x",
                "--redirect-uri",
                "https://x.example/cb",
                "--scopes",
                "public root",
            ],
            "unknown scope",
        ),
        (
            ["users", "create", "--domain", "acme.example.com", "--email", "not-an-email", "--password", "long enough"],
            "e-mail",
        ),
        (
            ["users", "create", "--domain", "nowhere.example", "--email", "a@b.example", "--password", "long enough"],
            "no domain",
        ),
        (
            ["api-keys", "create", "--domain", "acme.example.com", "--user", "ghost@acme.example.com", "--name", "k"],
            "no user",
        ),
        (["domains", "create", "--name", "Bad", "--host", "bad host!"], "host name"),
    ],
)
def test_bad_input_fails_clearly(runner, domain, args, message):
    result = runner.invoke(args=args)
    assert result.exit_code != 0
    assert result.stdout == ""
    assert message in result.stderr


def test_duplicate_email_is_refused_case_insensitively(runner, domain):
    args = ["users", "create", "--domain", "acme.example.com", "--password", "long enough password"]
    assert runner.invoke(args=args + ["--email", "dup@acme.example.com"]).exit_code == 0
    result = runner.invoke(args=args + ["--email", "DUP@acme.example.com"])
    assert result.exit_code != 0
    assert "already exists" in result.stderr


def test_duplicate_domain_host_is_refused(runner, domain):
    result = runner.invoke(args=["domains", "create", "--name", "Again", "--host", "acme.example.com"])
    assert result.exit_code != 0
    assert "already exists" in result.stderr


def test_seed_demo_is_idempotent_and_prints_the_same_credentials(runner):
    first = runner.invoke(args=["seed-demo"])
    second = runner.invoke(args=["seed-demo"])
    assert first.exit_code == second.exit_code == 0
    assert json.loads(first.stdout) == json.loads(second.stdout)
    _, domains = run(runner, "domains", "list")
    assert [d["host"] for d in domains["domains"]] == ["localhost"]


def test_domain_scopes_can_be_added_listed_and_removed(runner, domain):
    _, added = run(runner, "domains", "scopes", "add", "--domain", "acme.example.com", "booking.read", "booking.write")
    assert added["scopes"] == ["public", "mqtt.read", "mqtt.write", "booking.read", "booking.write"]
    _, again = run(runner, "domains", "scopes", "add", "--domain", "acme.example.com", "booking.read")
    assert again["scopes"] == added["scopes"]
    _, removed = run(runner, "domains", "scopes", "remove", "--domain", "acme.example.com", "booking.write")
    assert removed["scopes"] == ["public", "mqtt.read", "mqtt.write", "booking.read"]
    _, listed = run(runner, "domains", "scopes", "list", "--domain", "acme.example.com")
    assert listed["scopes"] == removed["scopes"]


def test_an_added_scope_may_be_given_to_an_application(runner, domain):
    args = ["apps", "create", "--domain", "acme.example.com", "--name", "x", "--redirect-uri", "https://x.example/cb"]
    assert runner.invoke(args=args + ["--scopes", "public booking.read"]).exit_code != 0
    run(runner, "domains", "scopes", "add", "--domain", "acme.example.com", "booking.read")
    result, out = run(runner, *args, "--scopes", "public booking.read")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    "scope,message",
    [("public", "stays"), ("nothing.here", "has no scope"), ("mqtt.read", "still in use by application")],
)
def test_a_scope_in_use_or_unknown_is_not_removed(runner, domain, scope, message):
    run(
        runner,
        "apps",
        "create",
        "--domain",
        "acme.example.com",
        "--name",
        "x",
        "--redirect-uri",
        "https://x.example/cb",
        "--scopes",
        "public mqtt.read",
    )
    result = runner.invoke(args=["domains", "scopes", "remove", "--domain", "acme.example.com", scope])
    assert result.exit_code != 0
    assert message in result.stderr


def test_bad_scope_names_are_refused(runner, domain):
    result = runner.invoke(args=["domains", "scopes", "add", "--domain", "acme.example.com", 'qu"ote'])
    assert result.exit_code != 0
    assert "not a valid scope name" in result.stderr


def test_apps_have_their_own_lifetimes(runner, domain, world):
    _, created = run(
        runner,
        "apps",
        "create",
        "--domain",
        "acme.example.com",
        "--name",
        "Short",
        "--redirect-uri",
        "https://x.example/cb",
        "--access-token-ttl",
        "300",
        "--refresh-token-ttl",
        "86400",
    )
    [stored] = world.query(select(Application))
    assert (stored.access_token_ttl, stored.refresh_token_ttl) == (300, 86400)
    _, updated = run(
        runner,
        "apps",
        "update",
        "--client-id",
        created["client_id"],
        "--access-token-ttl",
        "0",
        "--scopes",
        "mqtt.read",
    )
    assert updated["access_token_ttl"] is None
    assert updated["refresh_token_ttl"] == 86400
    assert updated["scopes"] == "mqtt.read"
    result = runner.invoke(args=["apps", "update", "--client-id", created["client_id"], "--scopes", "root"])
    assert result.exit_code != 0
    assert "unknown scope" in result.stderr
    result = runner.invoke(args=["apps", "update", "--client-id", "nope", "--name", "x"])
    assert "no application" in result.stderr


def test_a_public_app_requires_pkce_unless_created_with_no_require_pkce(runner, domain, world):
    base = ["apps", "create", "--domain", "acme.example.com", "--redirect-uri", "https://x.example/cb"]
    made = {
        name: run(runner, *base, "--name", name, *flags)[1]["client_id"]
        for name, flags in (
            ("default", []),
            ("legacy", ["--no-require-pkce"]),
            ("backend", ["--confidential"]),
            ("plain", ["--allow-plain-pkce"]),
        )
    }
    stored = {a.name: a for a in world.query(select(Application).where(Application.client_id.in_(made.values())))}
    assert {name: a.require_pkce for name, a in stored.items()} == {
        "default": True,
        "legacy": False,
        "backend": False,
        "plain": True,
    }
    assert {name: a.allow_plain_pkce for name, a in stored.items()} == {
        "default": False,
        "legacy": False,
        "backend": False,
        "plain": True,
    }
