"""The OpenAPI document, with the rules ninja cannot write from a view's signature.

Query parameters are separate in OpenAPI, so "at most one of offset and timestamp" cannot be said of
two of them; it can of one parameter that is an object, serialized ``style: form, explode: true``
(``?offset=5``, exactly as two separate parameters would be), with ``maxProperties: 1``. A view keeps
its plain parameters; ``exclusive_query`` rewrites its document so that clients, and the schemathesis
tests, know the rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ninja import NinjaAPI
from ninja.openapi.schema import OpenAPISchema


@dataclass(frozen=True, slots=True, kw_only=True)
class Exclusive:
    method: str  # "get"
    path: str  # as the document names it: "/api/labs/{slug}/topics/{topic}/records"
    name: str  # the object parameter's name
    fields: tuple[str, ...]
    description: str


EXCLUSIVE: list[Exclusive] = []


def exclusive_query(*, method: str, path: str, name: str, fields: tuple[str, ...], description: str) -> None:
    """Document the query parameters ``fields`` of an operation as one object: at most one of them set."""
    EXCLUSIVE.append(Exclusive(method=method, path=path, name=name, fields=fields, description=description))


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [X, null]`` as X: a query parameter is absent or has a value, never null."""
    options = [s for s in schema.get("anyOf", ()) if s.get("type") != "null"]
    base = dict(options[0]) if len(options) == 1 else {k: v for k, v in schema.items() if k != "anyOf"}
    if "description" in schema:
        base["description"] = schema["description"]
    return base


def rewrite(document: dict[str, Any], rule: Exclusive) -> None:
    operation = document["paths"][rule.path][rule.method]
    params: list[dict[str, Any]] = operation["parameters"]
    taken = {p["name"]: p for p in params if p["in"] == "query" and p["name"] in rule.fields}
    missing = [f for f in rule.fields if f not in taken]
    if missing:
        raise LookupError(f"{rule.method.upper()} {rule.path} has no query parameter {missing[0]}")
    operation["parameters"] = [p for p in params if not (p["in"] == "query" and p["name"] in rule.fields)] + [
        {
            "in": "query",
            "name": rule.name,
            "style": "form",
            "explode": True,
            "required": False,
            "description": rule.description,
            "schema": {
                "type": "object",
                "properties": {f: _not_null(taken[f]["schema"]) for f in rule.fields},
                "additionalProperties": False,
                "maxProperties": 1,
            },
        }
    ]


class LabApi(NinjaAPI):
    def get_openapi_schema(self, *args: Any, **kwargs: Any) -> OpenAPISchema:
        document = super().get_openapi_schema(*args, **kwargs)
        for rule in EXCLUSIVE:
            rewrite(document, rule)
        return document
