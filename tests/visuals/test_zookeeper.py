"""The ZooKeeper tree: znodes in order, ephemeral ones marked, new and vanished ones flagged for a poll."""

from __future__ import annotations

from lab.visuals.zookeeper import zookeeper_tree


def _node(path: str, data: str = "", *, ephemeral: bool = False, version: int = 0) -> dict:
    return {"path": path, "data": data, "ephemeral": ephemeral, "version": version, "children": 0}


TREE = [
    _node("/"),
    _node("/brokers"),
    _node("/brokers/ids"),
    _node("/brokers/ids/1", '{"version":5,"host":"127.0.0.1"}', ephemeral=True),
    _node("/brokers/ids/2", '{"version":5,"host":"127.0.0.1"}', ephemeral=True),
    _node("/controller", '{"version":1,"brokerid":1}', ephemeral=True),
    _node("/controller_epoch", "3"),
]


def test_ephemeral_nodes_are_marked_and_json_is_pretty() -> None:
    view = zookeeper_tree(TREE, None, chroot="/kafka-lab/demo", store="zookeeper", config={})
    assert (view.count, view.ephemerals) == (7, 3)
    ids = {n.path: n for n in view.nodes}
    assert ids["/brokers/ids/1"].ephemeral
    assert ids["/brokers/ids/1"].depth == 3
    assert ids["/brokers/ids/1"].name == "1"
    assert ids["/controller"].pretty == '{\n  "brokerid": 1,\n  "version": 1\n}'
    assert ids["/controller_epoch"].pretty is None
    assert ids["/controller_epoch"].summary == "3"
    assert not any(n.new for n in view.nodes)  # the first poll: nothing to compare with
    assert "zookeeper.session.timeout.ms" in view.ephemeral_tip


def test_a_vanished_node_stays_one_poll_as_gone_and_a_new_one_is_flagged() -> None:
    later = [n for n in TREE if n["path"] != "/brokers/ids/2"] + [_node("/isr_change_notification")]
    view = zookeeper_tree(later, TREE, chroot="/c", store="zookeeper", config={})
    flags = {n.path: (n.new, n.gone) for n in view.nodes}
    assert flags["/brokers/ids/2"] == (False, True)
    assert flags["/isr_change_notification"] == (True, False)
    assert flags["/brokers/ids/1"] == (False, False)
    assert view.count == 7  # gone nodes are not counted
    paths = [n.path for n in view.nodes]
    assert paths.index("/brokers/ids/1") < paths.index("/brokers/ids/2") < paths.index("/controller")


def test_long_data_is_summarised_on_one_line() -> None:
    long = '{"a": "' + "x" * 200 + '"}'
    (_root, node) = zookeeper_tree(
        [_node("/"), _node("/t", long)], None, chroot="/c", store="memory", config={}
    ).nodes
    assert len(node.summary) == 72
    assert node.summary.endswith("…")
