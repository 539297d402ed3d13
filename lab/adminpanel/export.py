"""Messages as a download: JSON (the records as the browser read them) or CSV (one row a record)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

FORMATS = ("json", "csv")
CSV_COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "value", "headers")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_NUMBER = re.compile(r"[-+]?\d+(\.\d+)?")


def filename(lab: str, topic: str, partition: int, records: Sequence[Mapping[str, Any]], fmt: str) -> str:
    """``<lab>-<topic>-<partition>-offsets-<first>-<last>.<fmt>``: says what it holds, safe on any disk."""
    if records:
        span = f"offsets-{records[0]['offset']}-{records[-1]['offset']}"
    else:
        span = "empty"
    stem = "-".join(_UNSAFE.sub("_", part) for part in (lab, topic, str(partition), span))
    return f"{stem}.{fmt}"


def to_json(records: Sequence[Mapping[str, Any]]) -> str:
    return json.dumps(list(records), indent=2, ensure_ascii=False) + "\n"


def to_csv(records: Sequence[Mapping[str, Any]]) -> str:
    """A header row, then one row a record; a null key or value is an empty cell, headers are JSON."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in records:
        writer.writerow(
            [
                r["topic"],
                r["partition"],
                r["offset"],
                r["timestamp"],
                "" if r["key"] is None else _cell(r["key"]),
                "" if r["value"] is None else _cell(r["value"]),
                json.dumps(r.get("headers") or {}, ensure_ascii=False) if r.get("headers") else "",
            ]
        )
    return out.getvalue()


def _cell(text: str) -> str:
    # A cell starting with = + - @ is a formula to a spreadsheet: a leading quote keeps it text
    # (a plain number such as -5 stays as it is).
    if text[:1] in ("=", "+", "-", "@", "\t", "\r") and not _NUMBER.fullmatch(text):
        return "'" + text
    return text
