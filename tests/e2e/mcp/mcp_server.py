"""An MCP server of the official Python SDK (``mcp`` from PyPI) protected by this service, as docs/mcp.md sets
one up: it publishes RFC 9728 metadata naming the service, and verifies each bearer token by introspection
(RFC 7662) with its own confidential application's credentials.

Run: python -m tests.e2e.mcp.mcp_server PORT ISSUER CLIENT_ID CLIENT_SECRET SCOPE
"""

from __future__ import annotations

import sys

import httpx2
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer


class IntrospectionVerifier:
    """The SDK's TokenVerifier: the service's introspection endpoint says whether a token is active, for whom,
    with which scopes, and for which resource (``aud``)."""

    def __init__(self, issuer: str, client_id: str, client_secret: str, resource: str) -> None:
        self.endpoint = f"{issuer}/auth/oauth/introspect"
        self.credentials = (client_id, client_secret)
        self.resource = resource

    async def verify_token(self, token: str) -> AccessToken | None:
        async with httpx2.AsyncClient(timeout=10) as client:
            answer = await client.post(self.endpoint, data={"token": token}, auth=self.credentials)
        if answer.status_code != 200:
            return None
        claims = answer.json()
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if not claims.get("active") or self.resource not in audiences:
            return None  # not active, or a token for another resource
        return AccessToken(
            token=token,
            client_id=claims["client_id"],
            scopes=claims.get("scope", "").split(),
            expires_at=claims.get("exp"),
            resource=self.resource,
            subject=claims.get("sub"),
        )


def main(port: int, issuer: str, client_id: str, client_secret: str, scope: str) -> None:
    resource = f"http://127.0.0.1:{port}/mcp"
    server = MCPServer(
        name="authsvc e2e",
        token_verifier=IntrospectionVerifier(issuer, client_id, client_secret, resource),
        auth=AuthSettings(
            issuer_url=issuer,
            resource_server_url=resource,
            required_scopes=[scope],
            validate_token_resource=True,
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Who the token is for: its client and subject."""
        token = get_access_token()
        assert token is not None
        return f"{token.client_id} for {token.subject} with {' '.join(token.scopes)}"

    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]), *sys.argv[2:6])
