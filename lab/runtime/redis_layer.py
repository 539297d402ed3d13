"""channels-redis with fewer round trips per message: what the web process and the lab workers talk over.

As shipped, ``RedisChannelLayer`` makes four round trips to send a message (drop expired ones, count,
add, set the expiry) and four to receive one on a process's channels (a clean-up script, a blocking
pop, a copy into a backup set, its removal), the next receive waiting for the last. A class's web
process receives every watched lab's frames, the pages' full states and the workers' answers that
way, one message at a time; a worker's courier, sharing the GIL with its labs' drivers, waits for it
on every round trip. Here:

- a send is one script: the same checks (expired messages dropped, ``ChannelFull`` at capacity), one
  round trip; a group send two (the members, then one script per Redis server that drops expired
  messages and adds the message to each member's set with room) where channels-redis makes four;
- a process's channels (``specific.<process>!<id>``, all in one sorted set) are read in batches: one
  pop takes what is waiting, up to ``RECEIVE_BATCH`` messages, in order; the blocking pop is made only
  when nothing waits. The pop runs as a task of its own, so a receive cancelled meanwhile (a websocket
  closing) loses none of what it took: the next receive hands it out. The backup set channels-redis
  keeps against that loss has no other use for such channels: only this process reads them, and
  they end with it.

Everything else (groups, general channels, capacity, expiry, message format) is channels-redis's own.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any

from channels.exceptions import ChannelFull
from channels_redis.core import RedisChannelLayer

RECEIVE_BATCH = 100  # at most a channel's capacity waits: one pop takes them all

# KEYS[1] the channel's sorted set; ARGV: message, score (now), expired before, capacity, expiry.
_SEND = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, ARGV[3])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
    return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""


# KEYS: the members' sorted sets; ARGV: a message per key, a capacity per key, now, expired before, expiry.
_GROUP_SEND = """
local n = #KEYS
local now, expired, expiry = ARGV[2 * n + 1], ARGV[2 * n + 2], ARGV[2 * n + 3]
local full = 0
for i = 1, n do
    redis.call('ZREMRANGEBYSCORE', KEYS[i], 0, expired)
    if redis.call('ZCARD', KEYS[i]) < tonumber(ARGV[n + i]) then
        redis.call('ZADD', KEYS[i], now, ARGV[i])
        redis.call('EXPIRE', KEYS[i], expiry)
    else
        full = full + 1
    end
end
return full
"""


class LabRedisChannelLayer(RedisChannelLayer):  # type: ignore[misc]  # channels-redis is untyped
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._taken: dict[str, deque[bytes]] = {}  # by a process channel's key: popped, not handed out
        self._popping: dict[str, asyncio.Task[None]] = {}
        self.pops = 0  # round trips made to receive (a test counts them)

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "message is not a dict"
        assert self.require_valid_channel_name(channel), "Channel name not valid"
        assert "__asgi_channel__" not in message
        name = channel
        if "!" in channel:  # a process's channel: its messages share the process's set, named inside
            message = {**message, "__asgi_channel__": channel}
            name = self.non_local_name(channel)
            index = self.consistent_hash(channel)
        else:
            index = next(self._send_index_generator)
        now = time.time()
        added = await self.connection(index).eval(
            _SEND,
            1,
            self.prefix + name,
            self.serialize(message),
            now,
            int(now) - int(self.expiry),
            self.get_capacity(channel),
            int(self.expiry),
        )
        if not added:
            raise ChannelFull()

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        """``message`` to every member of ``group``; a member whose channel is full misses it (as
        channels-redis does)."""
        assert self.require_valid_group_name(group), "Group name not valid"
        key = self._group_key(group)
        now = time.time()
        async with self.connection(self.consistent_hash(group)).pipeline(transaction=False) as pipe:
            pipe.zremrangebyscore(key, min=0, max=int(now) - self.group_expiry)
            pipe.zrange(key, 0, -1)
            _expired, members = await pipe.execute()
        channels = [member.decode("utf8") for member in members]
        by_server, messages, capacities = self._map_channel_keys_to_connection(channels, message)
        for index, keys in by_server.items():
            args = [*(messages[k] for k in keys), *(capacities[k] for k in keys)]
            await self.connection(index).eval(
                _GROUP_SEND, len(keys), *keys, *args, now, int(now) - int(self.expiry), int(self.expiry)
            )

    async def receive_single(self, channel: str) -> tuple[Any, dict[str, Any]]:
        if "!" not in channel:
            return await super().receive_single(channel)  # type: ignore[no-any-return]
        assert self.require_valid_channel_name(channel, receive=True), "Channel name invalid"
        key = self.prefix + channel
        taken = self._taken.setdefault(key, deque())
        while not taken:
            loop = asyncio.get_running_loop()
            popping = self._popping.get(key)
            if popping is None or popping.done() or popping.get_loop() is not loop:
                popping = loop.create_task(self._pop(self.consistent_hash(channel), key, taken))
                popping.add_done_callback(_seen)
                self._popping[key] = popping
            # Shielded: a receive cancelled here leaves the pop to finish and keep what it took.
            await asyncio.shield(popping)
        message = self.deserialize(taken.popleft())
        return message.pop("__asgi_channel__", channel), message

    async def close_pools(self) -> None:
        """Stop this loop's pops (the courier's and the relay's shutdown) before their connections go."""
        loop = asyncio.get_running_loop()
        for key, popping in list(self._popping.items()):
            if popping.get_loop() is loop:
                popping.cancel()
                del self._popping[key]
        await super().close_pools()

    async def _pop(self, index: int, key: str, taken: deque[bytes]) -> None:
        connection = self.connection(index)
        self.pops += 1
        waiting = await connection.zpopmin(key, RECEIVE_BATCH)
        if waiting:
            taken.extend(member for member, _score in waiting)
            return
        self.pops += 1
        arrived = await connection.bzpopmin(key, timeout=self.brpop_timeout)
        if arrived is not None:
            taken.append(arrived[1])


def _seen(task: asyncio.Task[None]) -> None:
    """Retrieve a pop's error: its receive may have been cancelled, leaving nobody to hear that Redis went
    away (asyncio would log it as never retrieved); the next receive pops again."""
    if not task.cancelled():
        task.exception()
