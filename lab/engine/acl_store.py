"""ACLs in ZooKeeper, written and read as Kafka's AclAuthorizer does in ZooKeeper mode.

Each resource pattern is one znode holding every entry on it (``acl.resource_path``), changed by a
conditional write on the znode's version (another writer in between: read again and retry), and
each change is announced by a sequential change node that brokers watch. Filters are Kafka's
AclBindingFilter: ANY in a field matches everything; the MATCH pattern type finds every pattern
that applies to one name (the literal name, the literal wildcard and every prefix of it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from lab.engine import acl
from lab.engine.acl import (
    AclBinding,
    AclEntry,
    AclFilter,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from lab.engine.metadata.store import BadVersion, NodeExists, NoNode, Stat
from lab.engine.tasks import Pending

RETRIES = 10  # conditional writes lost to another writer before giving up (Kafka retries forever)


class AclSession(Protocol):
    def create(
        self, path: str, data: bytes = b"", *, sequential: bool = False, make_parents: bool = False
    ) -> Pending[str]: ...
    def get(self, path: str) -> Pending[tuple[bytes, Stat]]: ...
    def get_children(self, path: str) -> Pending[list[str]]: ...
    def set(self, path: str, data: bytes, version: int = -1) -> Pending[Stat]: ...
    def delete(self, path: str, version: int = -1) -> Pending[None]: ...


AclsChanged = Callable[[Sequence[AclBinding], Sequence[AclBinding]], None]  # (added, removed)


class AclStore:
    """CreateAcls, DescribeAcls and DeleteAcls over a ZooKeeper session, and loading every binding.
    ``on_change`` hears of each resource's ACLs written (added, removed), once ZooKeeper has them."""

    def __init__(self, session: AclSession, on_change: AclsChanged | None = None) -> None:
        self._zk = session
        self._on_change = on_change

    async def load(self) -> frozenset[AclBinding]:
        """Every binding in ZooKeeper (a broker's cache at startup)."""
        found: set[AclBinding] = set()
        for resource in await self._resources():
            found |= {AclBinding(resource, e) for e in (await self._read(resource))[0]}
        return frozenset(found)

    async def load_resource(self, resource: ResourcePattern) -> frozenset[AclBinding]:
        """One resource's bindings again (what a change node names)."""
        return frozenset(AclBinding(resource, e) for e in (await self._read(resource))[0])

    async def create(self, bindings: Sequence[AclBinding]) -> None:
        """Add bindings (each checked first: INVALID_REQUEST and nothing written if any is bad)."""
        for binding in bindings:
            acl.check_binding(binding)
        by_resource: dict[ResourcePattern, set[AclEntry]] = {}
        for binding in bindings:
            by_resource.setdefault(binding.resource, set()).add(binding.entry)
        for resource, entries in sorted(by_resource.items(), key=lambda kv: acl.resource_path(kv[0])):
            await self._update(resource, add=entries)
            if self._on_change is not None:
                self._on_change(sorted((AclBinding(resource, e) for e in entries), key=_order), [])

    async def describe(self, wanted: AclFilter) -> list[AclBinding]:
        return sorted((b for b in await self.load() if wanted.matches(b)), key=_order)

    async def delete(self, filters: Sequence[AclFilter]) -> list[list[AclBinding]]:
        """Remove what each filter matches; per filter, the bindings it removed."""
        removed: list[list[AclBinding]] = [[] for _ in filters]
        for resource in await self._resources():
            entries, _ = await self._read(resource)
            gone: set[AclEntry] = set()
            for n, wanted in enumerate(filters):
                hits = [AclBinding(resource, e) for e in entries if wanted.matches(AclBinding(resource, e))]
                removed[n] += hits
                gone |= {b.entry for b in hits}
            if gone:
                await self._update(resource, remove=gone)
                if self._on_change is not None:
                    self._on_change([], sorted((AclBinding(resource, e) for e in gone), key=_order))
        return [sorted(r, key=_order) for r in removed]

    # ------------------------------------------------------------------ znodes

    async def _resources(self) -> list[ResourcePattern]:
        found: list[ResourcePattern] = []
        for root, pattern in ((acl.ACL_ROOT, PatternType.LITERAL), (acl.EXTENDED_ROOT, PatternType.PREFIXED)):
            for kind in ResourceType:
                try:
                    names = await self._zk.get_children(f"{root}/{kind.value}")
                except NoNode:
                    continue
                found += [ResourcePattern(kind, name, pattern) for name in sorted(names)]
        return found

    async def _read(self, resource: ResourcePattern) -> tuple[frozenset[AclEntry], int]:
        """The resource's entries and its znode's version (-1: no znode)."""
        try:
            data, stat = await self._zk.get(acl.resource_path(resource))
        except NoNode:
            return frozenset(), -1
        return acl.decode_acls(data), stat.version

    async def _update(
        self, resource: ResourcePattern, *, add: Iterable[AclEntry] = (), remove: Iterable[AclEntry] = ()
    ) -> None:
        path = acl.resource_path(resource)
        for _ in range(RETRIES):
            entries, version = await self._read(resource)
            wanted = (entries | frozenset(add)) - frozenset(remove)
            if wanted == entries:
                return
            try:
                if version < 0:
                    await self._zk.create(path, acl.encode_acls(wanted), make_parents=True)
                elif wanted:
                    await self._zk.set(path, acl.encode_acls(wanted), version)
                else:
                    await self._zk.delete(path, version)
            except (BadVersion, NodeExists, NoNode):
                continue  # another writer was first: read again
            where, data = acl.change_node(resource)
            await self._zk.create(where, data, sequential=True, make_parents=True)
            return
        raise BadVersion(f"{path} kept changing under {RETRIES} writes")


def _order(binding: AclBinding) -> tuple[str, str, str, str, str, str, str]:
    r, e = binding.resource, binding.entry
    return (r.type.value, r.pattern.value, r.name, e.principal, e.host, e.operation.value, e.permission.value)
