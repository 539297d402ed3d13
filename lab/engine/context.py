"""What every broker of one cluster shares: the clock, the network, the metadata store, the journal."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.engine.config import BrokerConfig
from lab.engine.events import Journal
from lab.engine.metadata.store import MetadataStore
from lab.engine.network import Network
from lab.engine.scheduler import Scheduler


@dataclass(slots=True)
class EngineContext:
    scheduler: Scheduler
    network: Network
    store: MetadataStore
    journal: Journal
    config: BrokerConfig
    data_dir: Path
    # What the newest controller knew (ControllerContext), kept after it dies: the pictures'
    # and the invariants' view of which broker should lead each partition.
    controller_context: Any = None

    @property
    def now_ms(self) -> int:
        return self.scheduler.now_ms
