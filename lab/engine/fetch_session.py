"""Incremental fetch sessions (KIP-227), both sides: the leader's FetchSessionCache and a follower's
FetchSessionHandler.

A follower's first fetch to a leader is a full one (session id 0, epoch 0: "make me a session").
The leader answers every partition and a session id; from then on the follower sends that id and
the next epoch, with only the partitions whose fetch state changed (new fetch offset, log start,
leader epoch) and the ones it stopped fetching (``forgotten``), and the leader answers only the
partitions with something to say: records, a new high watermark, last stable offset or log start
offset, or an error. An idle partition then costs a round neither in the request nor in the answer,
while the leader still counts its follower as fetching it (the ISR).

The leader keeps ``max.incremental.fetch.session.cache.slots`` sessions. A session id it does not
know (the leader restarted, or evicted it) answers FETCH_SESSION_ID_NOT_FOUND, an epoch out of step
INVALID_FETCH_SESSION_EPOCH; either way the follower's next fetch is a full one again. Sessions
are the follower's only: a consumer's fetch has epoch -1 (sessionless), and the wire layer declines
real clients' sessions (id 0 in the answer), which KIP-227 allows.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from random import Random
from typing import TYPE_CHECKING, NamedTuple

from lab.engine.errors import FetchSessionIdNotFound, InvalidFetchSessionEpoch, KafkaError
from lab.engine.ids import TopicPartition
from lab.engine.protocol import FetchPartition, FetchRequest, FetchResponse

if TYPE_CHECKING:
    from lab.engine.partition import Partition

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0  # a full fetch that asks for a new session
FINAL_EPOCH = -1  # a full fetch without a session (and the end of the one named, if any)
# Kafka's FetchSessionCache evicts a session unused this long to make room (a constant in Kafka).
EVICTION_MS = 120_000


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: 1 after 0 and after the largest int32 (0 means a new session)."""
    return 1 if epoch >= 2**31 - 1 else epoch + 1


# ---------------------------------------------------------------------------- the leader's side


@dataclass(slots=True)
class CachedPartition:
    """What the leader last told the follower of a partition of a session (its fetch state is in
    the session's ``fetches``)."""

    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1

    def quiet(self, fetch: FetchPartition, partition: Partition) -> bool:
        """Nothing to tell (Kafka's CachedPartition.maybeUpdateResponseData would leave it out): the
        follower is at the log end of the leader it names, and the offsets it was told still hold."""
        log = partition.log
        return (
            fetch.fetch_offset == log.log_end_offset
            and partition.high_watermark == self.high_watermark
            and partition.last_stable_offset == self.last_stable_offset
            and log.log_start_offset == self.log_start_offset
            and fetch.current_leader_epoch == partition.leader_epoch
            and partition.is_leader
        )


@dataclass(slots=True, eq=False)
class FetchSession:
    id: int
    replica_id: int
    epoch: int  # the epoch the next incremental fetch must carry
    last_used_ms: int
    partitions: dict[TopicPartition, CachedPartition] = field(default_factory=dict)
    # The fetch state of every partition, as the leader reads them: one dict kept up to date, and
    # the request over it, remade only when the follower's wait or size asks change. A follower has
    # one fetch in flight, so nothing changes them while a fetch of this session waits.
    fetches: dict[TopicPartition, FetchPartition] = field(default_factory=dict)
    request: FetchRequest | None = None

    def next(self, req: FetchRequest, now_ms: int) -> FetchContext:
        """Take an incremental fetch at the expected epoch: what changed, what is forgotten."""
        parts, fetches = self.partitions, self.fetches
        for tp in req.forgotten:
            parts.pop(tp, None)
            fetches.pop(tp, None)
        for tp, fp in req.partitions.items():
            if tp not in fetches:
                parts[tp] = CachedPartition()
            fetches[tp] = fp
        self.epoch = next_epoch(self.epoch)
        self.last_used_ms = now_ms
        whole = self.request
        if (
            whole is None
            or whole.max_wait_ms != req.max_wait_ms
            or whole.min_bytes != req.min_bytes
            or whole.max_bytes != req.max_bytes
        ):
            whole = self.request = FetchRequest(
                replica_id=req.replica_id,
                max_wait_ms=req.max_wait_ms,
                min_bytes=req.min_bytes,
                partitions=fetches,
                max_bytes=req.max_bytes,
                isolation_level=req.isolation_level,
                session_id=self.id,
            )
        return FetchContext(whole, self, False)

    def told(self, response: FetchResponse) -> None:
        """Remember what an answer (as sent) told the follower."""
        cache = self.partitions
        for tp, data in response.partitions.items():
            cached = cache.get(tp)
            if cached is None:
                continue  # forgotten while the fetch waited
            if data.error is not None:
                cached.high_watermark = -1  # told again once it mends, whatever its offsets then
            else:
                cached.high_watermark = data.high_watermark
                cached.last_stable_offset = data.last_stable_offset
                cached.log_start_offset = data.log_start_offset


class FetchContext(NamedTuple):
    """A fetch as the leader serves it: ``request`` names every partition to read (a session's
    incremental fetch: all of the session's); ``session`` is the session it belongs to (None:
    sessionless), and an incremental one (not ``full``) answers only partitions with news."""

    request: FetchRequest
    session: FetchSession | None = None
    full: bool = True
    error: KafkaError | None = None


class FetchSessionCache:
    """A leader's sessions (Kafka's FetchSessionCache): at most ``slots``, ids from a seeded random."""

    def __init__(self, slots: int, rng: Random) -> None:
        self.slots = slots
        self.sessions: dict[int, FetchSession] = {}
        self._rng = rng
        self.evictions = 0

    def new_context(self, req: FetchRequest, now_ms: int) -> FetchContext:
        """Kafka's FetchManager.newContext: the next fetch of a session, a new session, or none."""
        epoch = req.session_epoch
        if epoch > INITIAL_EPOCH:
            session = self.sessions.get(req.session_id)
            if session is None or session.replica_id != req.replica_id:
                why = f"fetch session {req.session_id} of broker {req.replica_id} is not in the cache"
                return FetchContext(req, error=FetchSessionIdNotFound(why))
            if session.epoch != epoch:
                why = f"fetch session {session.id} expected epoch {session.epoch}, got {epoch}"
                return FetchContext(req, error=InvalidFetchSessionEpoch(why))
            return session.next(req, now_ms)
        if req.session_id != INVALID_SESSION_ID:
            self.sessions.pop(req.session_id, None)  # the follower closes it
        if epoch == FINAL_EPOCH or req.replica_id < 0:
            return FetchContext(req)
        return FetchContext(req, self._create(req, now_ms), True)

    def _create(self, req: FetchRequest, now_ms: int) -> FetchSession | None:
        if len(self.sessions) >= self.slots and not self._evict_one(now_ms):
            return None  # the cache is full of sessions in use: the follower fetches in full
        session_id = INVALID_SESSION_ID
        while session_id == INVALID_SESSION_ID or session_id in self.sessions:
            session_id = self._rng.randint(1, 2**31 - 1)
        session = FetchSession(
            id=session_id,
            replica_id=req.replica_id,
            epoch=1,
            last_used_ms=now_ms,
            partitions={tp: CachedPartition() for tp in req.partitions},
            fetches=dict(req.partitions),
        )
        self.sessions[session_id] = session
        return session

    def _evict_one(self, now_ms: int) -> bool:
        """Room for one more: the least recently used session, if unused for EVICTION_MS (every
        session here is a follower's, which Kafka's cache ranks alike)."""
        if not self.sessions:
            return False
        oldest = min(self.sessions.values(), key=lambda s: s.last_used_ms)
        if now_ms - oldest.last_used_ms < EVICTION_MS:
            return False
        del self.sessions[oldest.id]
        self.evictions += 1
        return True


# ---------------------------------------------------------------------------- the follower's side


class FetchSessionHandler:
    """A follower's session with one leader (Kafka's FetchSessionHandler): what to send next."""

    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        # What the leader's session holds for each partition (as of the last fetch sent), and the
        # same while in a session (empty outside one): what the next fetch need not send again.
        self.sent: dict[TopicPartition, FetchPartition] = {}
        self.known: dict[TopicPartition, FetchPartition] = {}

    def request(
        self,
        replica_id: int,
        max_wait_ms: int,
        changed: dict[TopicPartition, FetchPartition],
        fetching: list[TopicPartition],
    ) -> tuple[FetchRequest, Mapping[TopicPartition, FetchPartition]]:
        """The next fetch, and every partition it reads (at the offsets the leader will read).

        ``fetching`` names every partition to fetch now, ``changed`` those of them whose fetch
        state differs from ``sent`` (all of them when there is no session yet)."""
        sent = self.sent
        forgotten: tuple[TopicPartition, ...] = ()
        if self.epoch == INITIAL_EPOCH:
            sent = self.sent = changed
        else:
            if len(fetching) != len(sent) or not changed.keys() <= sent.keys():
                now = set(fetching)
                forgotten = tuple(tp for tp in sent if tp not in now)
            if changed or forgotten:
                # A new dict: the fetch in flight keeps the one it was sent with.
                sent = {**sent, **changed}
                for tp in forgotten:
                    del sent[tp]
                self.known = self.sent = sent
        request = FetchRequest(
            replica_id=replica_id,
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            partitions=changed,
            session_id=self.session_id,
            session_epoch=self.epoch,
            forgotten=forgotten,
        )
        return request, sent

    def handle_response(self, response: FetchResponse) -> bool:
        """Take an answer's session part; False when the fetch failed as a whole (a session error:
        the next fetch is a full one)."""
        if response.error is not None:
            self.reset()
            return False
        if self.epoch == INITIAL_EPOCH:
            self.session_id = response.session_id
            if response.session_id == INVALID_SESSION_ID:
                self.known = {}  # declined: the next fetch is a full one again, asking once more
            else:
                self.epoch = 1
                self.known = self.sent
        else:
            self.epoch = next_epoch(self.epoch)
        return True

    def reset(self) -> None:
        """After an error: the next fetch is a full one, closing this session if the leader has it."""
        self.epoch = INITIAL_EPOCH
        self.known = self.sent = {}
