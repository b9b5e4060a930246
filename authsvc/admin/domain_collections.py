"""The admin API's collections under a domain, /api/engine/v2/domains/{id}/<name>: their list, create and
delete routes, wired once on the admin API's blueprint (authsvc.admin.api).

Each route looks the domain up for the caller (``admin.get``: its support reads, its admins change), reads
a create's body as JSON, and answers with what the collection's verbs return: the list as ``{"items": [...]}``,
a creation with 201 (200 where creating may change an existing record), a deletion with what the verb
returns, or the removed record when it returns nothing; a record is answered as its ``as_json()``.
The collection's own module (invitation_api, issuer_api, resource_server_api, webhook_api) names the verbs
and adds the routes only it has.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar

from flask import Response, jsonify

from authsvc import admin
from authsvc.admin.api import body, bp, current_actor
from authsvc.core.headers import no_store
from authsvc.core.models import Domain


class Record(Protocol):
    def as_json(self) -> Any: ...


Item = TypeVar("Item", bound=Record)
Answer = Mapping[str, Any] | Record


def _json(answer: Answer) -> Any:
    return answer if isinstance(answer, Mapping) else answer.as_json()


def actor_and_domain(record_id: str) -> tuple[admin.Actor, Domain]:
    """The caller, and the domain ``record_id`` names as the caller may see it."""
    actor = current_actor()
    return actor, admin.get(actor, Domain, record_id)


def domain_collection(
    name: str,
    item: str,
    *,
    listing: Callable[[admin.Actor, Domain], Iterable[Record]],
    create: Callable[[admin.Actor, Domain, Any], Answer],
    find: Callable[[admin.Actor, Domain, str], Item],
    remove: Callable[[admin.Actor, Item], Answer | None],
    create_status: int = 201,
) -> None:
    """Register GET and POST /domains/<record_id>/``name`` and DELETE /domains/<record_id>/``name``/<``item``>.

    ``find`` reads one record of the domain by its id (NotFound otherwise).
    """

    @no_store
    def list_view(record_id: str) -> Response:
        return jsonify(items=[row.as_json() for row in listing(*actor_and_domain(record_id))])

    @no_store
    def create_view(record_id: str) -> Response:
        actor, domain = actor_and_domain(record_id)
        response = jsonify(_json(create(actor, domain, body())))
        response.status_code = create_status
        return response

    @no_store
    def delete_view(record_id: str, **ids: str) -> Response:
        actor, domain = actor_and_domain(record_id)
        found = find(actor, domain, ids[item])
        return jsonify(_json(remove(actor, found) or found))

    bp.add_url_rule(f"/domains/<record_id>/{name}", f"list_{name}", list_view, methods=["GET"])
    bp.add_url_rule(f"/domains/<record_id>/{name}", f"create_{name}", create_view, methods=["POST"])
    bp.add_url_rule(f"/domains/<record_id>/{name}/<{item}>", f"delete_{name}", delete_view, methods=["DELETE"])
