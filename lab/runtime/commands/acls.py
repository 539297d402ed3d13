"""ACLs: list (all, or those that apply to one topic, with "who may do what" to it), add, delete.

As kafka-acls.sh does in ZooKeeper mode, they are written straight to ``/kafka-acl`` (and
``/kafka-acl-extended``), each change announced by a change node the brokers' authorizers read: a
request in flight (``actions.in_flight``), answered once ZooKeeper has it, by when the lab's spec
keeps it (``LiveLab._acls_changed``, as for an ACL a Kafka client's CreateAcls made). ACLs are kept whether or
not the brokers have an authorizer (``authorizer.class.name``); without one nobody enforces them,
and the answers say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lab.engine import limits
from lab.engine.acl import (
    SUPPORTED,
    AclBinding,
    AclFilter,
    Match,
    Operation,
    ResourceType,
    parse_binding,
    who_may,
)
from lab.engine.errors import InvalidRequest
from lab.runtime.actions import Act, _text, in_flight, register, register_read
from lab.runtime.spec import acl_entry

if TYPE_CHECKING:
    from lab.runtime.live import LiveLab

WAIT_S = 5.0
RESOURCE_TYPES = ("Topic", "Group", "Cluster", "TransactionalId")  # what a person may name (not tokens)


def as_json(binding: AclBinding) -> dict[str, str]:
    return {**acl_entry(binding), "text": str(binding)}


def _binding(p: Mapping[str, Any]) -> AclBinding:
    """The ACL the arguments name, checked as Kafka checks one: INVALID_REQUEST naming what is wrong
    (IllegalArgument for a text beyond the lab's limits)."""
    kind = _text(p, "resource_type", limits.ACL_RESOURCE, required=False) or "Topic"
    name = _text(p, "name", limits.ACL_RESOURCE)
    binding = parse_binding(
        resource_type=kind,
        name=name,
        pattern=_text(p, "pattern", limits.ACL_RESOURCE, required=False) or "literal",
        principal=_text(p, "principal", limits.PRINCIPAL),
        host=_text(p, "host", limits.ACL_HOST, required=False) or "*",
        operation=_text(p, "operation", limits.ACL_RESOURCE),
        permission=_text(p, "permission", limits.ACL_RESOURCE, required=False) or "allow",
    )
    if binding.resource.type.value not in RESOURCE_TYPES:
        raise InvalidRequest(f"the lab keeps ACLs on {', '.join(RESOURCE_TYPES)}, not {kind!r}")
    return binding


def status(lab: LiveLab) -> dict[str, Any]:
    """Whether the brokers enforce ACLs, and on what terms (with Kafka's defaults beside the lab's)."""
    config = lab.cluster.ctx.config
    enforced = bool(config.values.get("authorizer.class.name"))
    return {
        "enforced": enforced,
        "authorizer": config.values.get("authorizer.class.name", ""),
        "super_users": [s for s in str(config.values.get("super.users", "")).split(";") if s],
        "allow_everyone_if_no_acl_found": config.bool("allow.everyone.if.no.acl.found"),
        "note": ""
        if enforced
        else (
            "The brokers have no authorizer (authorizer.class.name is empty, Kafka's default): ACLs are kept "
            "in ZooKeeper but nobody enforces them. Make a lab with "
            "authorizer.class.name=kafka.security.authorizer.AclAuthorizer to have every request checked."
        ),
    }


def _list(p: Mapping[str, Any]) -> Act:
    topic = _text(p, "topic", limits.TOPIC_NAME, required=False) or None

    def run(lab: LiveLab) -> Any:
        cluster = lab.cluster
        wanted = AclFilter(ResourceType.TOPIC, topic, Match.MATCH) if topic is not None else AclFilter()
        asked = cluster.begin_describe_acls(wanted)

        def answer(found: list[AclBinding] | None, _: bool) -> dict[str, Any]:
            found = found or []
            out: dict[str, Any] = {"acls": [as_json(b) for b in found], **status(lab)}
            if topic is not None:
                decider = cluster.authorizer(found)
                ops = sorted(SUPPORTED[ResourceType.TOPIC], key=list(Operation).index)
                out["topic"] = topic
                out["operations"] = [o.value for o in ops]
                out["who_may"] = [
                    {
                        "principal": principal,
                        "may": {o.value: d.allowed for o, d in decisions.items()},
                        "why": {o.value: d.reason for o, d in decisions.items()},
                    }
                    for principal, decisions in who_may(decider, ResourceType.TOPIC, topic)
                ]
            return out

        return in_flight(lab, asked, settled=lambda _: True, answer=answer, what="the ACLs", wait_s=WAIT_S)

    return run


def _create(p: Mapping[str, Any]) -> Act:
    binding = _binding(p)

    def run(lab: LiveLab) -> Any:
        asked = lab.cluster.begin_create_acls([binding])  # the lab's spec keeps it (LiveLab._acls_changed)

        def answer(_: object, __: bool) -> dict[str, Any]:
            if not asked.done():
                return {"message": f"ACL asked for: {binding}; ZooKeeper answers when the lab's clock runs."}
            extra = (
                "" if status(lab)["enforced"] else " (kept, but not enforced: the brokers have no authorizer)"
            )
            return {"message": f"ACL added: {binding}{extra}.", "acl": as_json(binding)}

        return in_flight(lab, asked, settled=lambda _: True, answer=answer, what="the ACL", wait_s=WAIT_S)

    return run


def _delete(p: Mapping[str, Any]) -> Act:
    binding = _binding(p)
    r, e = binding.resource, binding.entry
    exactly = AclFilter(r.type, r.name, r.pattern, e.principal, e.host, e.operation, e.permission)

    def run(lab: LiveLab) -> Any:
        asked = lab.cluster.begin_delete_acls([exactly])

        def answer(gone: list[AclBinding] | None, _: bool) -> dict[str, Any]:
            if gone is None:
                return {
                    "message": f"ACL deletion asked for: {binding}; ZooKeeper answers when the clock runs."
                }
            if not gone:
                return {"message": f"No such ACL: {binding}. Nothing deleted.", "deleted": []}
            return {"message": f"ACL deleted: {binding}.", "deleted": [as_json(b) for b in gone]}

        return in_flight(
            lab, asked, settled=lambda _: True, answer=answer, what="the ACL deletion", wait_s=WAIT_S
        )

    return run


register_read("acls", _list)
register("acl-create", _create)
register("acl-delete", _delete)
