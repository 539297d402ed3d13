"""CreateAcls, DescribeAcls and DeleteAcls over the wire: Kafka's codes to the engine's ACL values.

Any broker answers them (the authorizer's store is ZooKeeper); a broker without an authorizer answers
SECURITY_DISABLED, as Kafka's does. A code that names no value, or ANY where a creation needs one,
fails that ACL with INVALID_REQUEST and leaves the others to be created.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any, TypeVar

from lab.engine import acl
from lab.engine import protocol as p
from lab.engine.acl import AclBinding, AclEntry, AclFilter, Match, PatternType, ResourcePattern
from lab.engine.errors import InvalidRequest
from lab.wire.codec import Request
from lab.wire.connection import Connection
from lab.wire.registry import serves
from lab.wire.shape import make

E = TypeVar("E", bound=Enum)
ANY = 1  # every field's ANY code in a filter
MATCH = 2  # a filter's pattern type: every pattern that applies to a name


def _of(codes: Mapping[E, int], code: int, what: str) -> E:
    for value, known in codes.items():
        if known == code:
            return value
    raise InvalidRequest(f"{code} is not a {what} code a creation may use")


def _or_any(codes: Mapping[E, int], code: int, what: str) -> E | None:
    return None if code == ANY else _of(codes, code, what)


def _binding(c: Any) -> AclBinding:
    resource = ResourcePattern(
        _of(acl.RESOURCE_CODES, c.resource_type, "resource type"),
        c.resource_name,
        _of(acl.PATTERN_CODES, c.resource_pattern_type, "pattern type"),
    )
    entry = AclEntry(
        c.principal,
        c.host,
        _of(acl.OPERATION_CODES, c.operation, "operation"),
        _of(acl.PERMISSION_CODES, c.permission_type, "permission type"),
    )
    return AclBinding(resource, entry)


def _filter(f: Any) -> AclFilter:
    pattern: PatternType | Match
    if f.pattern_type_filter == ANY:
        pattern = Match.ANY
    elif f.pattern_type_filter == MATCH:
        pattern = Match.MATCH
    else:
        pattern = _of(acl.PATTERN_CODES, f.pattern_type_filter, "pattern type")
    return AclFilter(
        resource_type=_or_any(acl.RESOURCE_CODES, f.resource_type_filter, "resource type"),
        name=f.resource_name_filter,
        pattern=pattern,
        principal=f.principal_filter,
        host=f.host_filter,
        operation=_or_any(acl.OPERATION_CODES, f.operation, "operation"),
        permission=_or_any(acl.PERMISSION_CODES, f.permission_type, "permission type"),
    )


def _codes(binding: AclBinding) -> dict[str, Any]:
    r, e = binding.resource, binding.entry
    return {
        "resource_type": acl.RESOURCE_CODES[r.type],
        "resource_name": r.name,
        "pattern_type": acl.PATTERN_CODES[r.pattern],
        "principal": e.principal,
        "host": e.host,
        "operation": acl.OPERATION_CODES[e.operation],
        "permission_type": acl.PERMISSION_CODES[e.permission],
    }


@serves(30, "CreateAcls", 1, 3)
async def create_acls(conn: Connection, request: Request) -> Any:
    creations = list(request.body.creations)
    results: list[dict[str, Any] | None] = [None] * len(creations)
    good: list[tuple[int, AclBinding]] = []
    for n, c in enumerate(creations):
        try:
            good.append((n, _binding(c)))
        except InvalidRequest as error:
            results[n] = {"error_code": error.name, "error_message": error.message}
    if good:
        answer: p.CreateAclsResponse = await conn.call(
            p.CreateAclsRequest(bindings=tuple(b for _, b in good))
        )
        for (n, _), r in zip(good, answer.results, strict=True):
            results[n] = {"error_code": r.error, "error_message": r.message if r.error else None}
    return make(request.response_schema, {"throttle_time": 0, "results": results})


@serves(29, "DescribeAcls", 1, 3)
async def describe_acls(conn: Connection, request: Request) -> Any:
    try:
        wanted = _filter(request.body)
    except InvalidRequest as error:
        return make(
            request.response_schema,
            {"throttle_time": 0, "error_code": error.name, "error_message": error.message, "resources": []},
        )
    answer: p.DescribeAclsResponse = await conn.call(p.DescribeAclsRequest(filter=wanted))
    resources: dict[ResourcePattern, list[dict[str, Any]]] = {}
    for b in answer.bindings:
        codes = _codes(b)
        resources.setdefault(b.resource, []).append(
            {k: codes[k] for k in ("principal", "host", "operation", "permission_type")}
        )
    return make(
        request.response_schema,
        {
            "throttle_time": 0,
            "error_code": answer.error,
            "error_message": answer.message if answer.error else None,
            "resources": [
                {
                    "resource_type": acl.RESOURCE_CODES[r.type],
                    "resource_name": r.name,
                    "pattern_type": acl.PATTERN_CODES[r.pattern],
                    "acls": entries,
                }
                for r, entries in resources.items()
            ],
        },
    )


@serves(31, "DeleteAcls", 1, 3)
async def delete_acls(conn: Connection, request: Request) -> Any:
    filters = list(request.body.filters)
    results: list[dict[str, Any] | None] = [None] * len(filters)
    good: list[tuple[int, AclFilter]] = []
    for n, f in enumerate(filters):
        try:
            good.append((n, _filter(f)))
        except InvalidRequest as error:
            results[n] = {"error_code": error.name, "error_message": error.message, "matching_acls": []}
    if good:
        answer: p.DeleteAclsResponse = await conn.call(p.DeleteAclsRequest(filters=tuple(f for _, f in good)))
        for (n, _), r in zip(good, answer.results, strict=True):
            results[n] = {
                "error_code": r.error,
                "error_message": r.message if r.error else None,
                "matching_acls": [
                    {"error_code": None, "error_message": None, **_codes(b)} for b in r.bindings
                ],
            }
    return make(request.response_schema, {"throttle_time": 0, "filter_results": results})
