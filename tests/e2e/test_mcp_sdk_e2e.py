"""The service in front of an MCP server, proved with the official MCP SDKs: Python (``mcp`` from PyPI)
and TypeScript (``@modelcontextprotocol/sdk`` from npm, a pinned Node peer: devtools/npm_peers.py).

The MCP server (tests/e2e/mcp/mcp_server.py, its own process) publishes RFC 9728 metadata naming the
service and verifies tokens by introspection. Each SDK's own OAuth client discovers the service from it,
registers by a Client ID Metadata Document (served by the test over TLS on loopback, its CA trusted by the
service through SSL_CERT_FILE) or, where the domain reads no documents, by open dynamic registration (no
initial access token, as MCP clients register), and runs the code flow with PKCE and ``resource``; the
browser step is an HTTP client that signs in and answers the consent page (for the TypeScript SDK, its
script tests/e2e/mcp/ts_client.cjs).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest
import requests
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from devtools import npm_peers
from devtools.services import Process, free_port
from tests.helpers import in_one_pass
from tests.helpers.documents import Documents
from tests.helpers.servers import running_service

# The SDK's flow does not depend on the backend; the rows it makes are checked on both (tests/api/oauth).
pytestmark = [pytest.mark.slow, in_one_pass("sqlite")]

HOST = "127.0.0.1"
PASSWORD = "mcp e2e password"
EMAIL = "person@example.com"
SCOPE = "mcp.tools"
CALLBACK = "http://127.0.0.1:9/callback"
TS_CLIENT = Path(__file__).resolve().parent / "mcp" / "ts_client.cjs"


@pytest.fixture(scope="module")
def setup(schema, tmp_path_factory) -> Iterator[dict]:
    documents = Documents(tmp_path_factory.mktemp("ca") / "ca.pem")
    mcp_port = free_port()
    mcp_url = f"http://{HOST}:{mcp_port}/mcp"
    instance = tmp_path_factory.mktemp("instance")
    with running_service(instance, SSL_CERT_FILE=str(documents.ca_file)) as svc:
        svc.cli("domains", "create", "--name", "MCP", "--host", HOST, "--scopes", f"public {SCOPE}")
        svc.cli("users", "create", "--domain", HOST, "--email", EMAIL, "--password", PASSWORD)
        # The documents are on loopback: a system admin's exception, as for identity providers.
        svc.cli("domains", "update", "--domain", HOST, "--client-metadata-allow-private-network")
        # MCP clients that use no document register without an initial access token.
        svc.cli("domains", "update", "--domain", HOST, "--open-registration", "on")
        created = svc.cli(
            "resources", "create", "--domain", HOST, "--uri", mcp_url, "--name", "Tools", "--scopes", SCOPE
        )
        assert created["uri"] == mcp_url
        verifier = svc.cli(
            "apps", "create", "--domain", HOST, "--name", "MCP server", "--redirect-uri", "http://127.0.0.1:9/rs",
            "--confidential", "--introspect",
        )  # fmt: skip
        argv = [sys.executable, "-m", "tests.e2e.mcp.mcp_server", str(mcp_port), svc.url]
        argv += [verifier["client_id"], verifier["client_secret"], SCOPE]
        mcp = Process("mcp-server", argv, instance / "mcp-server.log").start()
        try:
            _wait_for(mcp_url, mcp)
            yield {"service": svc, "documents": documents, "mcp_url": mcp_url}
        finally:
            mcp.stop()
            documents.close()


def _wait_for(url: str, process: Process) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            requests.get(url, timeout=1)
            return
        except requests.ConnectionError:
            if not process.alive() or time.monotonic() > deadline:
                raise AssertionError("the MCP server did not start:\n" + process.output()) from None
            time.sleep(0.2)


def signed_in(service) -> requests.Session:
    browser = requests.Session()
    answer = browser.post(service.url + "/auth/signin", params={"email": EMAIL, "password": PASSWORD}, timeout=10)
    assert answer.status_code == 202
    return browser


class Browser:
    """The user's browser for the SDK's redirect and callback handlers: signed in; it allows on a consent page."""

    def __init__(self, service) -> None:
        self.session = signed_in(service)
        self.consent_pages: list[str] = []
        self.location = ""

    async def redirect(self, url: str) -> None:
        answer = self.session.get(url, allow_redirects=False, timeout=10)
        if answer.status_code == 200:
            self.consent_pages.append(answer.text)
            token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', answer.text)
            assert token, answer.text
            answer = self.session.post(
                url, data={"csrf_token": token.group(1), "approve": "1"}, allow_redirects=False, timeout=10
            )
        assert answer.status_code in (302, 303), answer.text
        self.location = answer.headers["Location"]

    async def callback(self) -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(self.location).query)
        assert "code" in query, self.location
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0], iss=query.get("iss", [None])[0])


class Memory:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def call_tool(setup: dict, browser: Browser, *, metadata_url: str | None) -> tuple:
    """Connect the SDK's client to the MCP server, authorise it through the service, and call the tool."""
    storage = Memory()
    provider = OAuthClientProvider(
        server_url=setup["mcp_url"],
        client_metadata=OAuthClientMetadata(
            client_name="SDK client", redirect_uris=[CALLBACK], token_endpoint_auth_method="none"
        ),
        storage=storage,
        redirect_handler=browser.redirect,
        callback_handler=browser.callback,
        client_metadata_url=metadata_url,
    )

    async def run() -> str:
        async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
            async with streamable_http_client(setup["mcp_url"], http_client=http) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    result = await session.call_tool("whoami", {})
                    return result.content[0].text

    return asyncio.run(run()), storage


def test_the_sdk_registers_by_its_metadata_document_and_calls_a_tool(setup):
    """An MCP client names itself by the URL of its document: no registration step, and the user is asked."""
    service, documents = setup["service"], setup["documents"]
    metadata = service.url + "/.well-known/oauth-authorization-server"
    assert requests.get(metadata, timeout=10).json()["client_id_metadata_document_supported"] is True
    url = documents.base + "/sdk/client.json"
    # As Claude's document reads: a public client that also lists a grant the service does not serve.
    documents.serve(
        "/sdk/client.json",
        {
            "client_id": url,
            "client_name": "SDK client",
            "redirect_uris": [CALLBACK],
            "grant_types": ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
    )
    browser = Browser(service)
    answer, storage = call_tool(setup, browser, metadata_url=url)
    assert answer.startswith(f"{url} for ")
    assert answer.endswith(f"with {SCOPE}")
    assert len(browser.consent_pages) == 1
    page = browser.consent_pages[0]
    assert "not verified" in page and "SDK client" in page
    assert f'<strong class="redirect-host">{HOST}' in page
    # The token is for the MCP server alone, with its scope only.
    assert storage.tokens is not None and storage.tokens.scope == SCOPE
    # A second authorisation asks the user again: a document's client is never remembered.
    second = Browser(service)
    call_tool(setup, second, metadata_url=url)
    assert len(second.consent_pages) == 1
    # The document was fetched once: its row holds for its max-age.
    assert documents.fetched.count("/sdk/client.json") == 1


@contextmanager
def documents_off(service) -> Iterator[None]:
    """The domain reads no documents for a while: its metadata says so, and the SDKs register instead."""
    service.cli("domains", "update", "--domain", HOST, "--client-metadata-documents", "off")
    try:
        metadata = requests.get(service.url + "/.well-known/oauth-authorization-server", timeout=10).json()
        assert metadata["client_id_metadata_document_supported"] is False
        yield
    finally:
        service.cli("domains", "update", "--domain", HOST, "--client-metadata-documents", "any")


def openly_registered(service, client_id: str) -> bool:
    [application] = [a for a in service.cli("apps", "list", "--domain", HOST)["apps"] if a["client_id"] == client_id]
    return application["openly_registered"] and application["registration_token"] is None


def test_the_sdk_falls_back_to_dynamic_registration_where_documents_are_off(setup):
    """A domain that reads no documents says so in its metadata; the SDK then registers (RFC 7591) with no
    initial access token, under the domain's open registration, and its user is asked."""
    service = setup["service"]
    with documents_off(service):
        browser = Browser(service)
        answer, storage = call_tool(setup, browser, metadata_url=setup["documents"].base + "/unused.json")
    assert storage.client is not None and not storage.client.client_id.startswith("https://")
    assert openly_registered(service, storage.client.client_id)
    assert answer.startswith(f"{storage.client.client_id} for ")
    assert storage.tokens is not None and storage.tokens.scope == SCOPE
    assert len(browser.consent_pages) == 1


# The TypeScript SDK


def ts_client(setup: dict, metadata_url: str | None) -> dict:
    """Run tests/e2e/mcp/ts_client.cjs against the MCP server: what it printed (its answer, client, tokens,
    authorisation requests and consent pages)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is needed to run the MCP TypeScript SDK's client")
    try:
        modules = npm_peers.package_dir("@modelcontextprotocol/sdk").parent.parent
    except npm_peers.PeersMissing as exc:
        pytest.skip(str(exc))
    options = {
        "mcpUrl": setup["mcp_url"],
        "serviceUrl": setup["service"].url,
        "email": EMAIL,
        "password": PASSWORD,
        "callback": CALLBACK,
        "clientMetadataUrl": metadata_url,
    }
    done = subprocess.run(
        [node, str(TS_CLIENT), json.dumps(options)],
        env={**os.environ, "NODE_PATH": str(modules)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def assert_code_flow_with_pkce_and_resource(setup: dict, run: dict, client_id: str) -> None:
    [asked] = run["authorizationRequests"]
    assert asked["client_id"] == client_id and asked["response_type"] == "code"
    assert asked["code_challenge_method"] == "S256" and len(asked["code_challenge"]) == 43
    assert asked["resource"] == setup["mcp_url"] and asked["scope"] == SCOPE
    assert run["answer"].startswith(f"{client_id} for ")
    assert run["answer"].endswith(f"with {SCOPE}")
    # The token is for the MCP server alone, with its scope only; the user was asked once.
    assert run["tokens"]["scope"] == SCOPE and run["tokens"]["token_type"].lower() == "bearer"
    assert len(run["consentPages"]) == 1


def test_the_typescript_sdk_names_itself_by_its_metadata_document_and_calls_a_tool(setup):
    """The TypeScript SDK's clientMetadataUrl, where the service reads documents: no registration step."""
    documents = setup["documents"]
    url = documents.serve(
        "/ts-sdk/client.json",
        {
            "client_id": documents.base + "/ts-sdk/client.json",
            "client_name": "TS SDK client",
            "redirect_uris": [CALLBACK],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        },
    )
    run = ts_client(setup, url)
    assert run["client"]["client_id"] == url and "client_id_issued_at" not in run["client"]
    assert_code_flow_with_pkce_and_resource(setup, run, url)
    page = run["consentPages"][0]
    assert "not verified" in page and "TS SDK client" in page
    assert documents.fetched.count("/ts-sdk/client.json") == 1


def test_the_typescript_sdk_falls_back_to_open_dynamic_registration_and_calls_a_tool(setup):
    """Where documents are off the TypeScript SDK registers (RFC 7591) without an initial access token."""
    service = setup["service"]
    with documents_off(service):
        run = ts_client(setup, setup["documents"].base + "/unused-ts.json")
    client_id = run["client"]["client_id"]
    # Registered: a client_id of the service's, issued now, with the metadata the SDK sent.
    assert not client_id.startswith("https://") and abs(run["client"]["client_id_issued_at"] - time.time()) < 300
    assert run["client"]["redirect_uris"] == [CALLBACK] and run["client"]["token_endpoint_auth_method"] == "none"
    assert openly_registered(service, client_id)
    assert_code_flow_with_pkce_and_resource(setup, run, client_id)
    assert "TS SDK client" in run["consentPages"][0]
