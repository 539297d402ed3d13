"""ACLs as Kafka's AclAuthorizer (ZooKeeper mode) has them: bindings, their znodes, and the decision.

A binding is a resource pattern (type, name, LITERAL or PREFIXED) and an entry (principal, host,
operation, ALLOW or DENY). ``Authorizer.authorize`` answers as AclAuthorizer does: a super user may do
anything; a resource no ACL matches is open only with ``allow.everyone.if.no.acl.found``; a matching
DENY wins over any ALLOW; DESCRIBE is implied by READ, WRITE, DELETE and ALTER, DESCRIBE_CONFIGS by
ALTER_CONFIGS, and ALL stands for every operation. Each answer carries its reason in words, for the
timeline ("no ALLOW ACL for User:alice WRITE on Topic:orders; allow.everyone.if.no.acl.found=false").

The znodes are Kafka's: literal bindings under ``/kafka-acl/<Type>/<name>``, prefixed ones under
``/kafka-acl-extended/prefixed/<Type>/<name>``, each holding ``{"version": 1, "acls": [...]}``; a
change is announced by a sequential node under ``/kafka-acl-changes`` ("Topic:orders") or
``/kafka-acl-extended-changes`` (JSON), which every broker watches to reload that resource.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from lab.engine.errors import InvalidRequest

E = TypeVar("E", bound=Enum)


class ResourceType(Enum):
    TOPIC = "Topic"
    GROUP = "Group"
    CLUSTER = "Cluster"
    TRANSACTIONAL_ID = "TransactionalId"
    DELEGATION_TOKEN = "DelegationToken"


class PatternType(Enum):
    LITERAL = "Literal"
    PREFIXED = "Prefixed"


class Operation(Enum):
    ALL = "All"
    READ = "Read"
    WRITE = "Write"
    CREATE = "Create"
    DELETE = "Delete"
    ALTER = "Alter"
    DESCRIBE = "Describe"
    CLUSTER_ACTION = "ClusterAction"
    DESCRIBE_CONFIGS = "DescribeConfigs"
    ALTER_CONFIGS = "AlterConfigs"
    IDEMPOTENT_WRITE = "IdempotentWrite"


class Permission(Enum):
    ALLOW = "Allow"
    DENY = "Deny"


Op = Operation
# Kafka's documented operation/resource matrix (AclEntry.supportedOperations); ALL is valid on each.
SUPPORTED: Mapping[ResourceType, frozenset[Operation]] = {
    ResourceType.TOPIC: frozenset(
        {
            Op.READ,
            Op.WRITE,
            Op.CREATE,
            Op.DESCRIBE,
            Op.DELETE,
            Op.ALTER,
            Op.DESCRIBE_CONFIGS,
            Op.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset({Op.READ, Op.DESCRIBE, Op.DELETE}),
    ResourceType.CLUSTER: frozenset(
        {
            Op.CREATE,
            Op.CLUSTER_ACTION,
            Op.DESCRIBE_CONFIGS,
            Op.ALTER_CONFIGS,
            Op.IDEMPOTENT_WRITE,
            Op.ALTER,
            Op.DESCRIBE,
        }
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({Op.DESCRIBE, Op.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({Op.DESCRIBE}),
}
# What an ALLOW for an operation also allows: asking for DESCRIBE is answered by any of these.
IMPLIED_BY: Mapping[Operation, frozenset[Operation]] = {
    Op.DESCRIBE: frozenset({Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER}),
    Op.DESCRIBE_CONFIGS: frozenset({Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}),
}
# The protocol's codes (CreateAcls, DescribeAcls, DeleteAcls); 0 is UNKNOWN and 1 ANY in each.
RESOURCE_CODES: Mapping[ResourceType, int] = {t: n for n, t in enumerate(ResourceType, start=2)}
PATTERN_CODES: Mapping[PatternType, int] = {PatternType.LITERAL: 3, PatternType.PREFIXED: 4}
OPERATION_CODES: Mapping[Operation, int] = {o: n for n, o in enumerate(Operation, start=2)}
PERMISSION_CODES: Mapping[Permission, int] = {Permission.DENY: 2, Permission.ALLOW: 3}
CLUSTER_NAME = "kafka-cluster"  # the one Cluster resource's name
ANONYMOUS = "User:ANONYMOUS"  # a PLAINTEXT connection's principal (no authentication)
LAB_ADMIN = "User:admin"  # the lab's Python API, pages and simulated clients by default: a super user
BROKER_PRINCIPAL = "User:broker"  # the brokers' own requests (follower fetches, the controller's)
LAB_SUPER_USERS = f"{LAB_ADMIN};{BROKER_PRINCIPAL}"  # the lab's super.users (Kafka's default: none)
LOCAL_HOST = "127.0.0.1"  # where the lab's own clients connect from
WILDCARD = "*"  # a literal resource name, a principal's name or a host that matches every one
WILDCARD_PRINCIPAL = "User:*"

ACL_ROOT = "/kafka-acl"
ACL_CHANGES = "/kafka-acl-changes"
EXTENDED_ROOT = "/kafka-acl-extended/prefixed"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"


@dataclass(frozen=True, slots=True)
class RequestContext:
    """Who sends a request: the principal its connection authenticated as, and the client's address
    (Kafka's RequestContext). Every request of the engine carries one."""

    principal: str = LAB_ADMIN
    host: str = LOCAL_HOST

    def __str__(self) -> str:
        return f"{self.principal} from {self.host}"


LAB_CONTEXT = RequestContext()
BROKER_CONTEXT = RequestContext(BROKER_PRINCIPAL)


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    type: ResourceType
    name: str
    pattern: PatternType = PatternType.LITERAL

    def matches(self, name: str) -> bool:
        if self.pattern is PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, WILDCARD)

    def __str__(self) -> str:
        where = f"{self.type.value}:{self.name}"
        return where if self.pattern is PatternType.LITERAL else f"{where} (prefixed)"


@dataclass(frozen=True, slots=True)
class AclEntry:
    principal: str  # "User:alice", or "User:*"
    host: str  # an address, or "*"
    operation: Operation
    permission: Permission

    def applies_to(self, principal: str, host: str) -> bool:
        return self.principal in (principal, WILDCARD_PRINCIPAL) and self.host in (host, WILDCARD)

    def __str__(self) -> str:
        return f"{self.permission.value.upper()} {self.principal} {self.operation.value} from {self.host}"


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource: ResourcePattern
    entry: AclEntry

    def __str__(self) -> str:
        return f"{self.entry} on {self.resource}"


def named(kind: type[E], text: str) -> E:
    """``text`` as one of ``kind``'s values, in any case ("read", "Read", "READ", "describe_configs");
    INVALID_REQUEST naming the choices otherwise (an ACL with an unknown operation is refused whole)."""
    wanted = text.strip().replace("_", "").replace("-", "").lower()
    for member in kind:
        if wanted in (member.name.replace("_", "").lower(), str(member.value).lower()):
            return member
    choices = ", ".join(str(m.value) for m in kind)
    what = re.sub(r"(?<!^)(?=[A-Z])", " ", kind.__name__).lower()  # ResourceType: "resource type"
    article = "an" if what[0] in "aeiou" else "a"
    raise InvalidRequest(f"{text!r} is not {article} {what}; one of: {choices}")


class Match(Enum):
    """A filter's pattern type beyond a binding's own: ANY (every pattern) and MATCH (those applying
    to one name), as AclBindingFilter has them."""

    ANY = "Any"
    MATCH = "Match"


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Kafka's AclBindingFilter: None in a field is ANY."""

    resource_type: ResourceType | None = None
    name: str | None = None
    pattern: PatternType | Match = Match.ANY
    principal: str | None = None
    host: str | None = None
    operation: Operation | None = None
    permission: Permission | None = None

    def matches(self, binding: AclBinding) -> bool:
        r, e = binding.resource, binding.entry
        if self.resource_type is not None and r.type is not self.resource_type:
            return False
        if self.pattern is Match.MATCH:
            if self.name is not None and not r.matches(self.name):
                return False
        else:
            if isinstance(self.pattern, PatternType) and r.pattern is not self.pattern:
                return False
            if self.name is not None and r.name != self.name:
                return False
        return (
            (self.principal is None or e.principal == self.principal)
            and (self.host is None or e.host == self.host)
            and (self.operation is None or e.operation is self.operation)
            and (self.permission is None or e.permission is self.permission)
        )


def check_principal(principal: str) -> str:
    """A principal as Kafka writes one, Type:name (User:alice); INVALID_REQUEST otherwise."""
    kind, _, name = principal.partition(":")
    if not kind.strip() or not name.strip() or principal != principal.strip():
        raise InvalidRequest(f"a principal is written Type:name (User:alice), not {principal!r}")
    return principal


def check_binding(binding: AclBinding) -> AclBinding:
    """Kafka's checks before an ACL is stored (INVALID_REQUEST, nothing written)."""
    resource, entry = binding.resource, binding.entry
    if entry.operation is not Op.ALL and entry.operation not in SUPPORTED[resource.type]:
        raise InvalidRequest(
            f"{entry.operation.value} is not a valid operation for resource type {resource.type.value}; "
            f"it takes {', '.join(sorted(o.value for o in SUPPORTED[resource.type]))} or All"
        )
    if not resource.name:
        raise InvalidRequest("a resource name cannot be empty")
    if resource.type is ResourceType.CLUSTER and resource.name != CLUSTER_NAME:
        raise InvalidRequest(f"the Cluster resource is named {CLUSTER_NAME!r}, not {resource.name!r}")
    if resource.pattern is PatternType.PREFIXED and resource.name == WILDCARD:
        raise InvalidRequest("a prefixed pattern cannot be the wildcard '*': use a literal '*'")
    check_principal(entry.principal)
    if not entry.host:
        raise InvalidRequest("a host is an address or '*', not empty")
    return binding


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str


class Authorizer:
    """AclAuthorizer's decision over a set of bindings (the broker's cache of the ACL znodes)."""

    def __init__(
        self,
        bindings: Iterable[AclBinding] = (),
        *,
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self.bindings = frozenset(bindings)
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_everyone_if_no_acl_found

    def authorize(
        self, principal: str, host: str, operation: Operation, resource: ResourceType, name: str
    ) -> Decision:
        what = f"{principal} {operation.value.upper()} on {resource.value}:{name}"
        if principal in self.super_users:
            return Decision(True, f"{principal} is a super user (super.users)")
        acls = [b for b in self.bindings if b.resource.type is resource and b.resource.matches(name)]
        if not acls:
            flag = f"allow.everyone.if.no.acl.found={str(self.allow_if_no_acl).lower()}"
            return Decision(self.allow_if_no_acl, f"no ACL on {resource.value}:{name}; {flag}")
        mine = [b for b in acls if b.entry.applies_to(principal, host)]
        for b in mine:
            if b.entry.permission is Permission.DENY and b.entry.operation in (operation, Op.ALL):
                return Decision(False, f"{b} denies {what}: a DENY wins over any ALLOW")
        allowed_by = IMPLIED_BY.get(operation, frozenset({operation})) | {Op.ALL}
        for b in mine:
            if b.entry.permission is Permission.ALLOW and b.entry.operation in allowed_by:
                return Decision(True, f"{b} allows {what}")
        flag = f"allow.everyone.if.no.acl.found={str(self.allow_if_no_acl).lower()}"
        return Decision(False, f"no ALLOW ACL for {what}; {flag} (it applies only where no ACL exists)")

    def authorize_any(
        self, principal: str, host: str, operation: Operation, resource: ResourceType
    ) -> Decision:
        """KIP-679's authorizeByResourceType: may ``principal`` do ``operation`` on some resource of this
        type? Yes for a super user; for an ALLOW (literal or prefixed) no DENY on the same operation
        covers (a literal ``*`` DENY covers all, a DENY prefix covers what it starts); and, with
        ``allow.everyone.if.no.acl.found``, when no ACL of that type names the operation at all."""
        what = f"{principal} {operation.value.upper()} on any {resource.value}"
        if principal in self.super_users:
            return Decision(True, f"{principal} is a super user (super.users)")
        mine = [
            b
            for b in self.bindings
            if b.resource.type is resource
            and b.entry.applies_to(principal, host)
            and b.entry.operation in (operation, Op.ALL)
        ]
        denies = [b.resource for b in mine if b.entry.permission is Permission.DENY]
        if any(r.pattern is PatternType.LITERAL and r.name == WILDCARD for r in denies):
            return Decision(False, f"a DENY on every {resource.value} (literal *) denies {what}")

        def denied(r: ResourcePattern) -> bool:
            return any(
                (d.pattern is PatternType.PREFIXED and r.name.startswith(d.name))
                or (d.pattern is r.pattern and d.name == r.name)
                for d in denies
            )

        for b in mine:
            if b.entry.permission is Permission.ALLOW and not denied(b.resource):
                return Decision(True, f"{b} allows {what}")
        flag = f"allow.everyone.if.no.acl.found={str(self.allow_if_no_acl).lower()}"
        named = [
            b
            for b in self.bindings
            if b.resource.type is resource and b.entry.operation in (operation, Op.ALL)
        ]
        if not named and self.allow_if_no_acl:
            return Decision(True, f"no ACL on any {resource.value} names {operation.value}; {flag}")
        return Decision(False, f"no ALLOW ACL for {what}; {flag}")


def who_may(
    authorizer: Authorizer, kind: ResourceType, name: str, host: str = LOCAL_HOST
) -> list[tuple[str, dict[Operation, Decision]]]:
    """For each principal an ACL on ``kind:name`` names (and each super user), what the authorizer
    answers for every operation the resource type takes: "who may do what to this topic"."""
    principals = {
        b.entry.principal for b in authorizer.bindings if b.resource.type is kind and b.resource.matches(name)
    } | set(authorizer.super_users)
    operations = sorted(SUPPORTED[kind], key=lambda o: list(Operation).index(o))
    return [
        (principal, {op: authorizer.authorize(principal, host, op, kind, name) for op in operations})
        for principal in sorted(principals)
    ]


def parse_binding(
    *,
    resource_type: str,
    name: str,
    pattern: str = "literal",
    principal: str,
    host: str = WILDCARD,
    operation: str,
    permission: str = "allow",
) -> AclBinding:
    """A binding from words (a form's or the API's), checked as Kafka checks one: INVALID_REQUEST
    naming what is wrong, and the choices, otherwise."""
    binding = AclBinding(
        ResourcePattern(named(ResourceType, resource_type), name, named(PatternType, pattern)),
        AclEntry(principal, host, named(Operation, operation), named(Permission, permission)),
    )
    return check_binding(binding)


# ---------------------------------------------------------------------------- Kafka's znodes


def resource_path(resource: ResourcePattern) -> str:
    root = ACL_ROOT if resource.pattern is PatternType.LITERAL else EXTENDED_ROOT
    return f"{root}/{resource.type.value}/{resource.name}"


def encode_acls(entries: Iterable[AclEntry]) -> bytes:
    """A resource znode's data: ``{"version": 1, "acls": [...]}`` with Kafka's field names, in a stable order."""
    acls = [
        {
            "principal": e.principal,
            "permissionType": e.permission.value,
            "operation": e.operation.value,
            "host": e.host,
        }
        for e in sorted(
            set(entries), key=lambda e: (e.principal, e.host, e.operation.value, e.permission.value)
        )
    ]
    return json.dumps({"version": 1, "acls": acls}, separators=(",", ":")).encode()


def decode_acls(data: bytes) -> frozenset[AclEntry]:
    raw: Any = json.loads(data.decode() or "{}")
    return frozenset(
        AclEntry(
            principal=str(a["principal"]),
            host=str(a["host"]),
            operation=Operation(a["operation"]),
            permission=Permission(a["permissionType"]),
        )
        for a in raw.get("acls", ())
    )


def change_node(resource: ResourcePattern) -> tuple[str, bytes]:
    """Where and what to write (sequentially) so every broker reloads ``resource``'s ACLs."""
    if resource.pattern is PatternType.LITERAL:
        return f"{ACL_CHANGES}/{CHANGE_PREFIX}", f"{resource.type.value}:{resource.name}".encode()
    event = {
        "version": 1,
        "resourceType": resource.type.name,
        "name": resource.name,
        "patternType": resource.pattern.name,
    }
    return f"{EXTENDED_CHANGES}/{CHANGE_PREFIX}", json.dumps(event, separators=(",", ":")).encode()


def resource_of_change(root: str, data: bytes) -> ResourcePattern:
    """The resource a change node names (the inverse of ``change_node``)."""
    text = data.decode()
    if root == ACL_CHANGES:
        kind, _, name = text.partition(":")
        return ResourcePattern(ResourceType(kind), name)
    event = json.loads(text)
    return ResourcePattern(
        ResourceType[str(event["resourceType"]).upper()],
        str(event["name"]),
        PatternType[str(event["patternType"]).upper()],
    )
