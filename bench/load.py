"""What a load is, independent of the generator that drives it, and what it measured."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

Kind = Literal["static", "bearer", "code_flow", "refresh", "once", "hosts"]


@dataclass
class Load:
    """One scenario's requests.

    ``static``    the same request every time (method, path, headers, body)
    ``bearer``    GET ``path`` with ``Authorization: Bearer`` a random token of ``secrets``
    ``hosts``     GET ``path`` with ``Host`` a random one of ``secrets`` (a domain's documents)
    ``code_flow`` GET ``path`` (authorise, with ``headers``' session cookie) -> 302 with a
                  code, then POST ``exchange_prefix`` + code; both count as requests. With
                  ``exchange_body``, POST ``exchange_prefix`` with the form ``exchange_body`` + code
                  instead (a server that reads the form only: the floors' twin)
    ``refresh``   POST the refresh grant to ``token_path`` with one of ``secrets``; each answer's
                  new refresh token is used next (rotation: every refresh token is good once)
    ``once``      ``method`` ``path`` with ``body`` followed by one of ``secrets``, each sent once
                  (client assertions: a jti is single use); with ``secret_header``, the secret
                  goes in that header instead (DPoP proofs), beside ``headers``
    """

    name: str
    port: int
    kind: Kind = "static"
    method: str = "GET"
    path: str = "/"
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""
    ok: tuple[int, ...] = (200,)
    connections: int = 8
    timeout: float = 10.0
    secrets: list[str] = field(default_factory=list)
    client_id: str = ""
    exchange_prefix: str = ""
    exchange_body: str = ""
    secret_header: str = ""
    token_path: str = "/auth/oauth/token"


@dataclass
class Result:
    name: str
    generator: str
    duration: float
    requests: int
    ok: int
    p50_ms: float
    p99_ms: float
    statuses: dict[str, int] = field(default_factory=dict)
    socket_errors: int = 0
    connections: int = 0
    p95_ms: float = 0.0

    @property
    def rps(self) -> float:
        """Successful requests per second."""
        return self.ok / self.duration if self.duration else 0.0

    @property
    def failed(self) -> int:
        return self.requests - self.ok + self.socket_errors

    def as_json(self) -> dict:
        return {**asdict(self), "rps": round(self.rps, 2)}
