"""Exported messages: CSV a spreadsheet opens safely, JSON as read, and a filename that says what it holds."""

from __future__ import annotations

import csv
import io
import json

from lab.adminpanel import export

RECORDS = [
    {
        "topic": "orders",
        "partition": 0,
        "offset": 7,
        "timestamp": 1200,
        "key": "k",
        "value": "=SUM(A1)",
        "headers": {},
    },
    {
        "topic": "orders",
        "partition": 0,
        "offset": 8,
        "timestamp": 1300,
        "key": None,
        "value": "-5",
        "headers": {"h": "v"},
    },
    {
        "topic": "orders",
        "partition": 0,
        "offset": 9,
        "timestamp": 1400,
        "key": "a,b",
        "value": None,
        "headers": {},
    },
]


def test_csv_has_a_header_and_one_row_a_record() -> None:
    rows = list(csv.reader(io.StringIO(export.to_csv(RECORDS))))
    assert rows[0] == ["topic", "partition", "offset", "timestamp", "key", "value", "headers"]
    assert rows[1] == ["orders", "0", "7", "1200", "k", "'=SUM(A1)", ""]  # a formula stays text
    assert rows[2] == ["orders", "0", "8", "1300", "", "-5", '{"h": "v"}']  # a number stays a number
    assert rows[3] == ["orders", "0", "9", "1400", "a,b", "", ""]


def test_json_is_the_records_as_read() -> None:
    assert json.loads(export.to_json(RECORDS)) == RECORDS


def test_the_filename_says_lab_topic_partition_and_offsets() -> None:
    assert export.filename("demo", "orders", 0, RECORDS, "csv") == "demo-orders-0-offsets-7-9.csv"
    assert export.filename("demo", "orders", 2, [], "json") == "demo-orders-2-empty.json"
    assert export.filename("a b", "x/y", 0, [], "csv") == "a_b-x_y-0-empty.csv"
