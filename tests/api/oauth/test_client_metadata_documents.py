"""Client ID Metadata Documents: a client_id that is the https URL of the client's own metadata
(draft-ietf-oauth-client-id-metadata-document), fetched under the outbound rules and kept as an application
row of the domain for its cache lifetime; and a domain's registered protected resources (RFC 8707), whose
tokens carry only their scopes.

The documents are served over TLS on loopback by a test CA that SSL_CERT_FILE names; loopback needs the
domain's private-network exception, which the tests grant unless they check it."""

from __future__ import annotations

import itertools

import pytest
from sqlalchemy import select

from authsvc.core.models import Application, Domain, ResourceServer
from tests.helpers import HOST, REDIRECT_URI, authorize, get_code, headers, signin
from tests.helpers.code_exchange import exchange
from tests.helpers.documents import Documents

SCOPES = "public mqtt.read mqtt.write"


_PATHS = itertools.count(1)


@pytest.fixture(scope="module")
def documents(tmp_path_factory):
    served = Documents(tmp_path_factory.mktemp("ca") / "ca.pem")
    yield served
    served.close()


@pytest.fixture
def cimd(world, documents, monkeypatch):
    """A domain that reads documents (loopback allowed), a signed-in person, and a document maker."""
    monkeypatch.setenv("SSL_CERT_FILE", str(documents.ca_file))
    domain = world.domain(scopes=SCOPES)
    world.update(Domain, domain.id, client_metadata_allow_private_network=True)
    world.user(domain, "person@example.com")

    class Cimd:
        def __init__(self) -> None:
            self.domain = domain
            self.served = 0

        def document(self, path: str | None = None, cache: str = "max-age=600", **fields) -> str:
            """Serve a public client's document (``fields`` change it; a None removes one); its URL."""
            self.served += 1
            # A path never served before in this process (an object's id() is reused once it is freed).
            path = path or f"/{world.app.name}-{next(_PATHS)}/client.json"
            url = documents.base + path
            body = {"client_id": url, "client_name": "Doc client", "redirect_uris": [REDIRECT_URI]}
            body |= {"token_endpoint_auth_method": "none"}
            body |= fields
            documents.serve(path, {k: v for k, v in body.items() if v is not None}, cache)
            return url

    return Cimd()


# A document's client is public: PKCE is required of it.
PKCE = {"code_challenge": "a" * 43, "code_challenge_method": "S256"}


def ask(client, url: str, **params):
    return authorize(client, url, **(PKCE | params))


def consent_page(client, url: str, **params):
    signin(client)
    return ask(client, url, **params)


def test_a_document_client_is_made_from_its_document_and_always_asked(client, world, cimd):
    """The row keeps what the document says that the service serves; the user is asked every time, since
    anyone can serve a document with any name."""
    url = cimd.document(
        grant_types=["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
        logo_uri="https://docs.example.com/logo.png",
    )
    page = consent_page(client, url)
    assert page.status_code == 200, page.get_data(as_text=True)
    text = page.get_data(as_text=True)
    assert "not verified" in text and "Doc client" in text
    assert "names a logo at docs.example.com: not verified" in text
    assert '<strong class="redirect-host">app.example.com</strong>' in text
    [row] = world.query(select(Application).where(Application.client_id == url))
    assert row.domain_id == cimd.domain.id
    assert row.grant_types == ["authorization_code", "refresh_token"]
    assert row.token_endpoint_auth_method == "none" and row.require_pkce
    assert row.scopes == SCOPES and row.metadata_document_expires_at is not None
    # Asked again, though the first page could have been approved: nothing is remembered for such a client.
    assert ask(client, url).status_code == 200


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"client_id": "https://127.0.0.1/other.json"}, "client_id is not its URL"),
        ({"token_endpoint_auth_method": "client_secret_basic"}, "must be none or private_key_jwt"),
        ({"client_secret": "shared"}, "must not carry a client secret"),
        ({"token_endpoint_auth_method": "private_key_jwt"}, "names its keys by jwks_uri"),
        ({"redirect_uris": None}, "redirect_uris is required"),
        ({"grant_types": ["client_credentials"]}, "authorization_code grant"),
    ],
)
def test_a_document_that_breaks_a_rule_is_refused(client, world, cimd, fields, says):
    url = cimd.document(**fields)
    response = consent_page(client, url)
    assert response.status_code == 400
    assert response.get_json()["error"] == "invalid_client"
    assert says in response.get_json()["error_description"]
    assert world.query(select(Application).where(Application.client_id == url)) == []


def test_a_redirect_uri_the_document_does_not_list_is_refused(client, cimd):
    url = cimd.document()
    response = consent_page(client, url, redirect_uri="https://app.example.com/other")
    assert response.status_code == 400
    assert "redirect" in response.get_data(as_text=True).lower()


def test_rp_metadata_choices_are_read_for_what_the_service_supports(client, cimd):
    """ChatGPT's document lists the methods it can use rather than naming one: the public one is taken."""
    url = cimd.document(
        token_endpoint_auth_method=None, token_endpoint_auth_methods_supported=["client_secret_basic", "none"]
    )
    assert consent_page(client, url).status_code == 200


def test_a_document_larger_than_5_kib_is_refused(client, cimd):
    url = cimd.document(client_name="x" * 6000)
    response = consent_page(client, url)
    assert response.status_code == 400
    assert "larger than 5120 bytes" in response.get_json()["error_description"]


def test_the_domain_chooses_which_documents_it_reads(client, world, cimd):
    url = cimd.document()
    world.update(Domain, cimd.domain.id, client_metadata_documents="off")
    discovery = client.get("/.well-known/oauth-authorization-server", headers=headers())
    assert discovery.get_json()["client_id_metadata_document_supported"] is False
    assert "does not accept client metadata documents" in consent_page(client, url).get_json()["error_description"]
    world.update(Domain, cimd.domain.id, client_metadata_documents="allowlist", client_metadata_hosts="docs.example")
    assert client.get("/.well-known/oauth-authorization-server", headers=headers()).get_json()[
        "client_id_metadata_document_supported"
    ]
    assert "of this host" in ask(client, url).get_json()["error_description"]
    world.update(Domain, cimd.domain.id, client_metadata_hosts="docs.example 127.0.0.1")
    assert ask(client, url).status_code == 200


def test_loopback_documents_need_the_private_network_exception(client, world, cimd, documents):
    url = cimd.document()
    world.update(Domain, cimd.domain.id, client_metadata_allow_private_network=False)
    response = consent_page(client, url)
    assert "loopback or private address" in response.get_json()["error_description"]
    assert url.removeprefix(documents.base) not in documents.fetched


def test_a_document_is_read_again_after_its_cache_lifetime(client, world, cimd, documents, clock):
    """Within its max-age the row answers; after it (at least 60 s, at most a day) the document is fetched
    anew, and what changed takes effect."""
    path = f"/cached-{id(cimd)}/client.json"
    url = cimd.document(path, cache="public, max-age=120")
    assert consent_page(client, url).status_code == 200
    cimd.document(path, cache="max-age=120", redirect_uris=["https://app.example.com/moved"])
    assert ask(client, url).status_code == 200
    assert documents.fetched.count(path) == 1
    clock.advance(121)
    assert ask(client, url).status_code == 400  # the old redirect URI is no longer the document's
    assert ask(client, url, redirect_uri="https://app.example.com/moved").status_code == 200
    assert documents.fetched.count(path) == 2
    [row] = world.query(select(Application).where(Application.client_id == url))
    assert row.redirect_uris == ["https://app.example.com/moved"]


def test_a_token_for_a_registered_resource_carries_only_its_scopes(client, world, setup):
    """Every client may ask for the domain's resources; the token is for that resource (aud) with its scopes,
    and an application's own resource list, where set, still narrows what it may ask for."""
    resource = "https://mqtt.example.com/"
    world.save(ResourceServer(domain_id=setup.domain.id, uri=resource, name="MQTT", scopes="mqtt.read"))
    signin(client)
    answer = authorize(client, setup.confidential_app.client_id, scope="public mqtt.read", resource=resource)
    assert answer.status_code == 302, answer.get_data(as_text=True)
    code = answer.headers["Location"].split("code=")[1].split("&")[0]
    token = exchange(
        client,
        setup.confidential_app.client_id,
        code,
        where="form",
        client_secret=setup.client_secret,
        resource=resource,
    ).get_json()
    assert token.get("scope") == "mqtt.read", token
    inspected = client.get(
        "/api/engine/v2/api_keys/inspect", headers=headers(Authorization=f"Bearer {token['access_token']}")
    ).get_json()
    assert inspected["aud"] == resource
    assert inspected["scope"] == ["mqtt.read"]

    world.update(Application, setup.public_app.id, resources=["https://elsewhere.example.com/"])
    refused = authorize(client, setup.public_app.client_id, resource=resource)
    assert "invalid_target" in refused.headers["Location"]


def test_the_api_is_a_protected_resource_that_names_its_metadata(client, world, setup):
    """RFC 9728: a client that knows only the API's URL learns from a 401 where its metadata is, and from the
    metadata which authorisation server to ask; a token without the needed scope learns which one it needs."""
    api = f"https://{HOST}/api/engine/v2"
    document = client.get("/.well-known/oauth-protected-resource/api/engine/v2", headers=headers())
    assert document.status_code == 200
    assert document.get_json()["resource"] == api
    assert document.get_json()["authorization_servers"] == [f"https://{HOST}"]
    assert "admin" in document.get_json()["scopes_supported"]
    origin = client.get("/.well-known/oauth-protected-resource", headers=headers()).get_json()
    assert origin["resource"] == f"https://{HOST}"

    metadata = f'resource_metadata="https://{HOST}/.well-known/oauth-protected-resource/api/engine/v2"'
    for path in ("/api/engine/v2/domains", "/api/engine/v2/api_keys/inspect"):
        for token in (None, "not-a-token"):
            auth = {"Authorization": f"Bearer {token}"} if token else {}
            answer = client.get(path, headers=headers(**auth))
            assert answer.status_code == 401
            assert answer.headers["WWW-Authenticate"].startswith("Bearer ")
            assert metadata in answer.headers["WWW-Authenticate"]

    world.user(setup.domain, "admin@example.com", admin=True)
    signin(client, "admin@example.com")
    code = get_code(client, setup.public_app.client_id, scope="public")
    token = exchange(client, setup.public_app.client_id, code).get_json()["access_token"]
    refused = client.get("/api/engine/v2/domains", headers=headers(Authorization=f"Bearer {token}"))
    assert refused.status_code == 403
    assert refused.get_json()["error"] == "insufficient_scope"
    assert 'scope="admin"' in refused.headers["WWW-Authenticate"]
