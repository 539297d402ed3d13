"""read_tree walks any store through protocol reads only."""

from __future__ import annotations

import pytest

from lab.engine.metadata.store import BadArguments, NoNode
from lab.engine.metadata.tree import read_tree
from tests.engine.metadata.conftest import Harness


def test_read_tree_lists_every_znode_depth_first(harness: Harness) -> None:
    h = harness
    a = h.open("a")
    s = a.session
    h.wait(s.create("/brokers/ids/2", b'{"id":2}', make_parents=True, ephemeral=True))
    h.wait(s.create("/brokers/ids/1", b'{"id":1}', ephemeral=True))
    h.wait(s.create("/brokers/topics/orders", b"t", make_parents=True))
    h.wait(s.create("/admin", b""))

    views = h.run(read_tree(s))
    assert [v.path for v in views] == [
        "/",
        "/admin",
        "/brokers",
        "/brokers/ids",
        "/brokers/ids/1",
        "/brokers/ids/2",
        "/brokers/topics",
        "/brokers/topics/orders",
    ]
    by_path = {v.path: v for v in views}
    assert by_path["/brokers/ids/1"].data == b'{"id":1}'
    assert by_path["/brokers/ids/1"].stat.ephemeral_owner == s.session_id
    assert by_path["/brokers"].stat.num_children == 2

    sub = h.run(read_tree(s, "/brokers/topics"))
    assert [v.path for v in sub] == ["/brokers/topics", "/brokers/topics/orders"]
    with pytest.raises(NoNode):
        h.run(read_tree(s, "/missing"))
    with pytest.raises(BadArguments):
        h.run(read_tree(s, "brokers"))
