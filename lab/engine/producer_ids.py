"""Producer ids: a broker's ProducerIdManager and the InitProducerId it answers.

Kafka in ZooKeeper mode hands out producer ids in blocks of 1000 through one znode,
``/latest_producer_id_block`` (``{"version":1,"broker":1,"block_start":"0","block_end":"999"}``):
a broker that needs ids reads it, writes the next block with a conditional set on the version it
read, and reads again if another broker was quicker. Ids from its block then cost nothing. An
idempotent producer (no transactional.id) asks any broker for one with InitProducerId and starts
at epoch 0; the broker keeps no record of it (the partitions' producer state does). A transactional
producer asks its transaction coordinator, which takes an id from here for a new transactional id.

The block is taken when the first producer asks (Kafka takes one at start-up); a broker that
restarts takes a fresh block, so ids are never reused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lab.engine.errors import CoordinatorNotAvailable, KafkaError
from lab.engine.metadata import paths
from lab.engine.metadata.store import BadVersion, MetadataError, NodeExists, NoNode
from lab.engine.network import Envelope
from lab.engine.protocol import InitProducerIdRequest, InitProducerIdResponse

if TYPE_CHECKING:
    from lab.engine.broker import Broker

MAX_BLOCK_ATTEMPTS = 10  # conditional sets lost to other brokers before the request is answered with an error


class ProducerIdManager:
    """One broker's producer ids: the block it holds and the next id in it."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.block: paths.ProducerIdBlock | None = None
        self.next_id = -1
        # Who waits for an id (InitProducerId of an idempotent producer, or the transaction
        # coordinator for a new transactional id): each is given the id, or the error.
        self._waiting: list[Callable[[int | KafkaError], None]] = []
        self._fetching = False

    def handler(self, body: Any) -> Callable[[Envelope], None] | None:
        # A transactional id's InitProducerId goes to its transaction coordinator (transactions.py).
        if isinstance(body, InitProducerIdRequest) and body.transactional_id is None:
            return self._on_init_producer_id
        return None

    def _on_init_producer_id(self, env: Envelope) -> None:
        def answer(result: int | KafkaError) -> None:
            if isinstance(result, KafkaError):
                self.broker.endpoint.respond(
                    env, InitProducerIdResponse(error=result.name, message=result.message)
                )
            else:
                self.broker.endpoint.respond(
                    env, InitProducerIdResponse(producer_id=result, producer_epoch=0)
                )

        self.allocate(answer)

    def allocate(self, then: Callable[[int | KafkaError], None]) -> None:
        """A new producer id for ``then``, at once from the block, or once a new block is taken."""
        self._waiting.append(then)
        self._serve()

    def _serve(self) -> None:
        while self._waiting and self.block is not None and self.next_id <= self.block.block_end:
            then = self._waiting.pop(0)
            producer_id = self.next_id
            self.next_id += 1
            then(producer_id)
        if self._waiting and not self._fetching:
            self._fetching = True
            self.broker.spawn(self._take_block(), "take a producer id block")

    async def _take_block(self) -> None:
        try:
            block = await self._new_block()
        except (MetadataError, KafkaError) as exc:
            self._fetching = False
            error = CoordinatorNotAvailable(
                f"broker {self.broker.id} could not take a block of producer ids from "
                f"{paths.LATEST_PRODUCER_ID_BLOCK}: {exc}"
            )
            waiting, self._waiting = self._waiting, []
            for then in waiting:
                then(error)
            return
        self._fetching = False
        self.block = block
        self.next_id = block.block_start
        self.broker.journal(
            "producer_id_block",
            f"broker {self.broker.id} took producer ids {block.block_start}-{block.block_end} "
            f"from {paths.LATEST_PRODUCER_ID_BLOCK}",
        )
        self._serve()

    async def _new_block(self) -> paths.ProducerIdBlock:
        """Kafka's ZkProducerIdManager.getNewProducerIdBlock: read, then a conditional set, retried."""
        zk = self.broker._zk()
        path = paths.LATEST_PRODUCER_ID_BLOCK
        for _ in range(MAX_BLOCK_ATTEMPTS):
            try:
                data, stat = await zk.get(path)
                version: int | None = stat.version
            except NoNode:
                data, version = b"", None
            current = paths.decode_producer_id_block(data)
            start = 0 if current is None else current.block_end + 1
            block = paths.ProducerIdBlock(
                broker=self.broker.id, block_start=start, block_end=start + paths.PRODUCER_ID_BLOCK_SIZE - 1
            )
            encoded = paths.encode_producer_id_block(block)
            try:
                if version is None:
                    await zk.create(path, encoded, make_parents=True)
                else:
                    await zk.set(path, encoded, version=version)
            except (BadVersion, NodeExists):
                self.broker.journal(
                    "producer_id_block_retry",
                    f"broker {self.broker.id}: another broker took a block of producer ids first "
                    f"({path} is no longer at version {version}); reading it again",
                )
                continue
            return block
        raise CoordinatorNotAvailable(f"{MAX_BLOCK_ATTEMPTS} brokers were quicker to {path}")
