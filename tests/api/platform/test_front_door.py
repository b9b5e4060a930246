"""The front door: ``GET /`` on a domain's host names the domain and links to where a person goes next.

A newcomer opens http://localhost:5000/ first; a client that asks for JSON gets the same links as JSON.
"""

from __future__ import annotations

import re

from tests.helpers import HOST, headers


def links(html: str) -> set[str]:
    return set(re.findall(r'href="([^"]+)"', html))


def test_the_front_door_is_a_page_naming_the_domain_with_its_links(client, setup):
    answer = client.get("/", headers=headers())
    assert answer.status_code == 200
    assert answer.mimetype == "text/html"
    html = answer.get_data(as_text=True)
    assert f"<h1>{setup.domain.name}</h1>" in html
    assert {
        "/auth/login",
        "/auth/admin/",
        "/.well-known/openid-configuration",
        "/.well-known/oauth-authorization-server",
    } <= links(html)
    # A page like the others: no framing, nothing cached.
    assert answer.headers["X-Frame-Options"] == "DENY"
    assert answer.headers["Cache-Control"] == "no-store"


def test_a_browsers_accept_header_gets_the_page_and_a_json_client_gets_json(client, setup):
    browser = client.get("/", headers=headers(Accept="text/html,application/xhtml+xml,*/*;q=0.8"))
    assert browser.mimetype == "text/html"
    answer = client.get("/", headers=headers(Accept="application/json"))
    assert answer.status_code == 200
    assert answer.get_json() == {
        "domain": setup.domain.name,
        "host": HOST,
        "links": {
            "signin": f"https://{HOST}/auth/login",
            "console": f"https://{HOST}/auth/admin/",
            "openid_configuration": f"https://{HOST}/.well-known/openid-configuration",
            "oauth_authorization_server": f"https://{HOST}/.well-known/oauth-authorization-server",
        },
    }


def test_a_signed_in_person_is_named_on_the_front_door(client, setup):
    client.post(
        "/auth/signin", query_string={"email": "person@example.com", "password": "correct horse battery staple"}
    )
    html = client.get("/", headers=headers()).get_data(as_text=True)
    assert "person@example.com" in html
    assert "/auth/logout" in links(html)


def test_an_unknown_host_is_still_unknown_domain(client, setup):
    for accept in ("application/json", "text/html"):
        answer = client.get("/", headers={"Host": "nobody.example.com", "Accept": accept})
        assert answer.status_code == 404
        assert answer.get_json()["error"] == "unknown_domain"
