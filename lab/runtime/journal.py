"""The commands that changed a lab, kept on disk so the lab can be replayed: ``commands.jsonl`` in its
data directory, one JSON object a line.

The first line of a cluster's life is ``{"start": spec}`` (the spec it was built from: brokers, seed,
configs, topics, clients); each command that ran after it is ``{"seq", "at_ms", "name", "args",
"by"}``: its name and JSON arguments, the lab's virtual time when it ran, and who asked. A reset
deletes the data directory, so the file starts again with the new cluster; a restart of the server
adds a life below the last one. A command refused where it
arrived, or by the lab when it ran, changed nothing and is not kept; reads are not kept.

``replay`` builds the cluster again from the first line on the memory store, with the same seed, and
runs each command at its virtual time: the engine runs on virtual time alone, so it reaches the same
state. What does not travel as a command is not replayed: Kafka clients on the lab's listeners, and
scenario steps run by a player's tick hook.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lab.engine.errors import IllegalState

if TYPE_CHECKING:
    from lab.runtime.live import LiveLab

FILE = "commands.jsonl"
log = logging.getLogger(__name__)


def _actions() -> Any:
    from lab.runtime import actions  # the registry imports the live lab's modules: late, to avoid a cycle

    return actions


@dataclass(frozen=True, slots=True)
class Entry:
    seq: int
    at_ms: int
    name: str
    args: Mapping[str, Any]
    by: str

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "at_ms": self.at_ms,
            "name": self.name,
            "args": dict(self.args),
            "by": self.by,
        }


class CommandJournal:
    """Appends to ``commands.jsonl`` in ``data_dir`` (the driver thread writes; anyone may read)."""

    def __init__(self, data_dir: str | Path) -> None:
        self.path = Path(data_dir) / FILE
        self._lock = threading.Lock()
        self._seq = len(self.entries())

    def begin(self, spec: Mapping[str, Any]) -> None:
        """A cluster built from ``spec``: a new life in the file (an earlier one, before a restart of the
        server, stays above it; a reset deleted it with the lab's data)."""
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(json.dumps({"start": dict(spec)}, sort_keys=True) + "\n")
            self._seq = 0

    def append(self, *, at_ms: int, name: str, args: Mapping[str, Any], by: str) -> Entry:
        """Keep a command that ran. A disk that refuses the line costs the replay, not the command: it
        ran, and its answer goes to whoever asked."""
        with self._lock:
            self._seq += 1
            entry = Entry(seq=self._seq, at_ms=at_ms, name=name, args=dict(args), by=by)
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(entry.to_json(), sort_keys=True) + "\n")
            except OSError as error:
                log.warning("%s: command %s not journalled: %s", self.path, entry.seq, error)
        return entry

    def _lines(self) -> list[dict[str, Any]]:
        """The lines of the current life: from the last ``start`` on."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        starts = [i for i, line in enumerate(lines) if "start" in line]
        return lines[starts[-1] :] if starts else lines

    def start(self) -> dict[str, Any] | None:
        """The spec the cluster was built from (None: no journal yet)."""
        lines = self._lines()
        return dict(lines[0]["start"]) if lines and "start" in lines[0] else None

    def entries(self) -> list[Entry]:
        """The commands of the current life, in the order they ran."""
        return [
            Entry(seq=x["seq"], at_ms=x["at_ms"], name=x["name"], args=x["args"], by=x.get("by", ""))
            for x in self._lines()
            if "seq" in x
        ]


def replay(lab: LiveLab, entries: Sequence[Entry], *, until_ms: int) -> Future[None]:
    """Run ``entries`` on ``lab`` (a fresh lab built from the journal's ``start`` on the memory store,
    whose wall clock stands still, so its virtual time moves only as the journal says), each at its
    virtual time, then run the lab on to ``until_ms``. A command's answer is not waited for: what it
    changes comes from the engine's own time. An in-process tool: the lab's driver runs it all."""

    def run(live: LiveLab) -> None:
        cluster = live.cluster
        for entry in entries:
            if entry.at_ms < cluster.now_ms:
                raise IllegalState(
                    f"command {entry.seq} ({entry.name}) ran at {entry.at_ms} ms; this lab is at {cluster.now_ms} ms"
                )
            cluster.run_until(entry.at_ms, pace=False)
            _actions().plan(entry.name, entry.args)(live)
        cluster.run_until(until_ms, pace=False)

    return lab.submit(run)
