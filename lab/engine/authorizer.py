"""A broker's authorizer: Kafka's AclAuthorizer as it runs inside a broker (ZooKeeper mode).

With ``authorizer.class.name`` set, the broker loads every ACL from ZooKeeper once registered, and
keeps its cache current through the change nodes (``/kafka-acl-changes``,
``/kafka-acl-extended-changes``): each new one names a resource, whose ACLs it reads again. Until
the first load is done nothing but a super user is allowed (``allow.everyone.if.no.acl.found``
aside), as a Kafka broker serves nothing before its authorizer has started.

``authorize(context, operation, resource_type, name)`` is the one question every request asks
(``authorization.py`` says which, per API). A denial goes to the journal with its reason, summed up:
one line per principal, operation and resource at once, then one line "N more" per
``DENIAL_WINDOW_MS`` of virtual time while it keeps being denied (none once it stops), never a flood.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lab.engine import acl
from lab.engine.acl import (
    AclBinding,
    Authorizer,
    Decision,
    Operation,
    RequestContext,
    ResourcePattern,
    ResourceType,
)
from lab.engine.acl_store import AclStore
from lab.engine.metadata.store import NodeExists, NoNode, WatchEvent
from lab.engine.notifications import purge_obsolete
from lab.engine.scheduler import Timer

if TYPE_CHECKING:
    from lab.engine.broker import Broker
    from lab.engine.context import EngineContext

DENIAL_WINDOW_MS = 5_000  # one timeline line per principal, operation and resource this often at most
DenialKey = tuple[str, Operation, ResourceType, str]


@dataclass(slots=True)
class _Denied:
    first_ms: int
    reason: str
    host: str
    api: str
    more: int = 0  # denials since the line that was written
    timer: Timer | None = None


@dataclass(slots=True)
class DenialLog:
    """The cluster's denials, summed up for the timeline (one per cluster: every broker's add up)."""

    ctx: EngineContext
    open: dict[DenialKey, _Denied] = field(default_factory=dict)
    total: int = 0

    def denied(
        self,
        context: RequestContext,
        operation: Operation,
        kind: ResourceType,
        name: str,
        reason: str,
        *,
        broker: int,
        api: str,
    ) -> None:
        self.total += 1
        key = (context.principal, operation, kind, name)
        seen = self.open.get(key)
        if seen is not None:
            seen.more += 1
            seen.reason = reason  # the summary says the latest (an ACL may have changed meanwhile)
            return
        now = self.ctx.now_ms
        seen = self.open[key] = _Denied(now, reason, context.host, api)
        self._record(key, seen, broker=broker, count=1, first=True)
        seen.timer = self.ctx.scheduler.call_later(
            DENIAL_WINDOW_MS, self._close, key, broker, label="authorizer: denials' summary"
        )

    def _close(self, key: DenialKey, broker: int) -> None:
        """The end of a window: "N more" if it went on (and another window opens), else forget it."""
        seen = self.open.get(key)
        if seen is None:
            return
        if not seen.more:
            del self.open[key]
            return
        self._record(key, seen, broker=broker, count=seen.more, first=False)
        seen.more = 0
        seen.timer = self.ctx.scheduler.call_later(
            DENIAL_WINDOW_MS, self._close, key, broker, label="authorizer: denials' summary"
        )

    def _record(self, key: DenialKey, seen: _Denied, *, broker: int, count: int, first: bool) -> None:
        principal, operation, kind, name = key
        what = f"{principal} {operation.value.upper()} on {kind.value}:{name}"
        if first:
            text = f"denied {what} ({seen.api} from {seen.host}): {seen.reason}"
        else:
            secs = DENIAL_WINDOW_MS // 1000
            text = f"denied {what} {count} more time{'s' if count != 1 else ''} in {secs} s: {seen.reason}"
        self.ctx.journal.record(
            "authorization_denied",
            text,
            topic=name if kind is ResourceType.TOPIC else None,
            group=name if kind is ResourceType.GROUP else None,
            broker=broker,
            principal=principal,
            host=seen.host,
            operation=operation.value,
            resource_type=kind.value,
            resource=name,
            api=seen.api,
            count=count,
            reason=seen.reason,
        )


def denial_log(ctx: EngineContext) -> DenialLog:
    if ctx.denials is None:
        ctx.denials = DenialLog(ctx)
    log: DenialLog = ctx.denials
    return log


class BrokerAuthorizer:
    """One broker's ACL cache and its decisions."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.bindings: set[AclBinding] = set()
        self.loaded = False
        self._decider: Authorizer | None = None
        self._seen_changes: dict[str, str] = {}  # change root -> the last change node read
        # Asked before every request: read once (a broker's config does not change while it runs).
        self.enabled = bool(broker.config.values.get("authorizer.class.name"))

    @property
    def decider(self) -> Authorizer:
        if self._decider is None:
            config = self.broker.config
            supers = [s.strip() for s in str(config.values.get("super.users", "")).split(";") if s.strip()]
            self._decider = Authorizer(
                self.bindings,
                super_users=supers,
                allow_everyone_if_no_acl_found=config.bool("allow.everyone.if.no.acl.found"),
            )
        return self._decider

    def decide(
        self, context: RequestContext, operation: Operation, kind: ResourceType, name: str
    ) -> Decision:
        return self.decider.authorize(context.principal, context.host, operation, kind, name)

    def authorize(
        self,
        context: RequestContext | None,
        operation: Operation,
        kind: ResourceType,
        name: str = acl.CLUSTER_NAME,
        *,
        api: str = "",
        log: bool = True,
    ) -> bool:
        """May ``context`` do ``operation`` on ``kind:name``? Always, without an authorizer; a denial
        is journaled with its reason unless ``log`` is False (Kafka's logIfDenied: a list filtered)."""
        if not self.enabled:
            return True
        context = context or acl.LAB_CONTEXT
        decision = self.decide(context, operation, kind, name)
        if not decision.allowed and log:
            denial_log(self.broker.ctx).denied(
                context, operation, kind, name, decision.reason, broker=self.broker.id, api=api
            )
        return decision.allowed

    def authorize_any(self, context: RequestContext | None, operation: Operation, kind: ResourceType) -> bool:
        if not self.enabled:
            return True
        context = context or acl.LAB_CONTEXT
        return self.decider.authorize_any(context.principal, context.host, operation, kind).allowed

    # ------------------------------------------------------------------ the cache

    async def start(self) -> None:
        """Load every ACL, then follow the change nodes (the broker calls it once registered)."""
        if not self.enabled:
            return
        zk = self.broker._zk()
        for root in (acl.ACL_CHANGES, acl.EXTENDED_CHANGES):
            with contextlib.suppress(NodeExists):
                await zk.create(root, b"", make_parents=True)
        for root in (acl.ACL_CHANGES, acl.EXTENDED_CHANGES):
            self._seen_changes[root] = max(await zk.get_children(root), default="")
        self._set(await AclStore(zk).load())
        self.loaded = True
        for root in (acl.ACL_CHANGES, acl.EXTENDED_CHANGES):
            # Watch, and read what changed since the load began (none, mostly), then purge the old.
            await self._changes(root)

    def _set(self, bindings: set[AclBinding] | frozenset[AclBinding]) -> None:
        self.bindings = set(bindings)
        self._decider = None

    async def _watch(self, root: str) -> list[str]:
        """The change nodes under ``root``, read with a watch for the next one: one read, so no change
        can land between what was read and the watch (as Kafka's getChildren(registerWatch = true))."""
        zk = self.broker._zk()

        def changed(event: WatchEvent) -> None:
            if self.broker.alive:
                self.broker._jobs.put("acl-change", lambda: self._changes(root))

        try:
            return await zk.get_children(root, watch=changed)
        except NoNode:
            return []

    async def _changes(self, root: str) -> None:
        """Read the change nodes after the last one seen, and each named resource's ACLs again."""
        zk = self.broker._zk()
        names = sorted(await self._watch(root))
        store = AclStore(zk)
        for name in names:
            if name <= self._seen_changes.get(root, ""):
                continue
            self._seen_changes[root] = name
            try:
                data, _ = await zk.get(f"{root}/{name}")
            except NoNode:
                continue
            resource: ResourcePattern = acl.resource_of_change(root, data)
            fresh = await store.load_resource(resource)
            kept = {b for b in self.bindings if b.resource != resource}
            self._set(kept | fresh)
        await purge_obsolete(zk, root, names, self.broker.ctx.wall_ms)
