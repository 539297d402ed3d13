"""Kafka's compound ZooKeeper operations (KafkaZkClient), on any MetadataStore session.

The cluster id a broker joins (``getOrCreateClusterId``) and the controller election that creates
``/controller`` and bumps ``/controller_epoch`` in one ``multi`` (Kafka 2.7+'s
``registerControllerAndIncrementControllerEpoch``): either both happen or neither, so a
broker is never the controller under an epoch someone else also holds.
"""

from __future__ import annotations

from lab.engine.metadata import paths
from lab.engine.metadata.store import (
    BadVersion,
    CreateOp,
    MetadataError,
    NodeExists,
    NoNode,
    Session,
    SetDataOp,
    Stat,
)

INITIAL_CONTROLLER_EPOCH = 0  # KafkaController.InitialControllerEpoch: the first controller makes it 1


class ControllerMoved(MetadataError):
    """Kafka's ControllerMovedException: another broker holds /controller or moved the epoch on."""

    code = "CONTROLLER_MOVED"


async def get_or_create_cluster_id(session: Session, proposed: str) -> str:
    """The cluster's id from ``/cluster/id``; the first broker to ask writes ``proposed`` there."""
    try:
        raw, _ = await session.get(paths.CLUSTER_ID)
        return paths.decode_cluster_id(raw)
    except NoNode:
        pass
    try:
        await session.create(paths.CLUSTER_ID, paths.encode_cluster_id(proposed), make_parents=True)
        return proposed
    except NodeExists:  # another broker was first
        raw, _ = await session.get(paths.CLUSTER_ID)
        return paths.decode_cluster_id(raw)


async def register_controller_and_increment_controller_epoch(
    session: Session, broker_id: int, timestamp_ms: int
) -> tuple[int, int]:
    """Become the controller: ``/controller`` (ephemeral) and ``/controller_epoch`` + 1, in one multi.

    Returns the new controller epoch and the version of ``/controller_epoch`` it was written at
    (every later controller write is fenced on that version). ControllerMoved when another broker
    won, as Kafka's KafkaZkClient does it.
    """
    epoch, version = await _controller_epoch(session)
    new_epoch = epoch + 1
    try:
        results = await session.multi(
            [
                CreateOp(
                    path=paths.CONTROLLER,
                    data=paths.encode_controller(
                        paths.ControllerRegistration(broker_id=broker_id, timestamp_ms=timestamp_ms)
                    ),
                    ephemeral=True,
                ),
                SetDataOp(
                    path=paths.CONTROLLER_EPOCH,
                    data=paths.encode_controller_epoch(new_epoch),
                    version=version,
                ),
            ]
        )
    except (NodeExists, BadVersion):
        return await _check_controller_and_epoch(session, broker_id, new_epoch)
    stat = results[1]
    assert isinstance(stat, Stat)
    return new_epoch, stat.version


async def _controller_epoch(session: Session) -> tuple[int, int]:
    """``/controller_epoch`` and its version, made with Kafka's initial epoch 0 if it is not there."""
    try:
        raw, stat = await session.get(paths.CONTROLLER_EPOCH)
        return paths.decode_controller_epoch(raw), stat.version
    except NoNode:
        pass
    try:
        await session.create(paths.CONTROLLER_EPOCH, paths.encode_controller_epoch(INITIAL_CONTROLLER_EPOCH))
        return INITIAL_CONTROLLER_EPOCH, 0
    except NodeExists:
        raw, stat = await session.get(paths.CONTROLLER_EPOCH)
        return paths.decode_controller_epoch(raw), stat.version


async def _check_controller_and_epoch(session: Session, broker_id: int, new_epoch: int) -> tuple[int, int]:
    """The multi failed: it may still have been ours (a retried request). Kafka's checkControllerAndEpoch."""
    try:
        raw, _ = await session.get(paths.CONTROLLER)
    except NoNode:
        raise ControllerMoved(
            paths.CONTROLLER,
            "The ephemeral node at /controller went away while checking whether the controller election "
            "succeeds. Aborting controller startup procedure",
        ) from None
    if paths.decode_controller(raw).broker_id == broker_id:
        raw, stat = await session.get(paths.CONTROLLER_EPOCH)
        if paths.decode_controller_epoch(raw) == new_epoch:
            return new_epoch, stat.version
    raise ControllerMoved(
        paths.CONTROLLER, "Controller moved to another broker. Aborting controller startup procedure"
    )
