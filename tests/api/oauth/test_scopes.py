"""A domain's known scopes: GET /api/engine/v2/scopes, the CLI that adds them, and what applications may have."""

from tests.helpers import HOST, OTHER_HOST, headers

SCOPES = "/api/engine/v2/scopes"


def test_the_domains_scopes_are_listed(client, setup):
    response = client.get(SCOPES, headers=headers())
    assert response.status_code == 200
    assert response.get_json() == {"domain": HOST, "scopes": ["public", "mqtt.read", "mqtt.write"]}


def test_a_scope_an_operator_adds_is_listed_and_advertised(client, runner, setup):
    result = runner.invoke(args=["domains", "scopes", "add", "--domain", HOST, "placeos.booking.read"])
    assert result.exit_code == 0, result.output
    assert client.get(SCOPES, headers=headers()).get_json()["scopes"][-1] == "placeos.booking.read"
    metadata = client.get("/.well-known/oauth-authorization-server", headers=headers()).get_json()
    assert "placeos.booking.read" in metadata["scopes_supported"]


def test_each_domain_has_its_own_list(client, setup, world):
    world.domain(OTHER_HOST, scopes="public")
    assert client.get(SCOPES, headers=headers(OTHER_HOST)).get_json()["scopes"] == ["public"]


def test_an_unknown_host_is_404(client, setup):
    assert client.get(SCOPES, headers=headers("nowhere.example")).status_code == 404


def test_an_application_cannot_be_given_a_scope_the_domain_does_not_know(runner, setup):
    result = runner.invoke(
        args=[
            "apps",
            "create",
            "--domain",
            HOST,
            "--name",
            "x",
            "--redirect-uri",
            "https://x.example/cb",
            "--scopes",
            "public placeos.booking.read",
        ]
    )
    assert result.exit_code != 0
    assert "unknown scope 'placeos.booking.read'" in result.stderr
