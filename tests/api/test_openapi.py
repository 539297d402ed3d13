"""The OpenAPI document says the rules ninja cannot read off a view: at most one of offset and timestamp."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from lab.api.main import api
from lab.api.openapi import Exclusive, LabApi, rewrite
from lab.engine import limits

READ = "/api/labs/{slug}/topics/{topic}/records"


def _query(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in document["paths"][READ]["get"]["parameters"] if p["in"] == "query"}


def test_offset_and_timestamp_are_one_object_with_at_most_one_set() -> None:
    query = _query(api.get_openapi_schema())
    assert "offset" not in query
    assert "timestamp" not in query
    start = query["start"]
    assert (start["style"], start["explode"], start["required"]) == ("form", True, False)  # ?offset=5
    assert start["schema"]["maxProperties"] == 1
    assert start["schema"]["additionalProperties"] is False
    assert start["schema"]["properties"]["offset"] == {
        "minimum": 0,
        "maximum": 2**63 - 1,  # Kafka's offsets are int64
        "type": "integer",
        "description": "start here (default: the log start offset)",
    }
    assert {"partition", "limit", "search"} <= set(query)


def test_a_rule_naming_a_parameter_the_view_lacks_is_an_error_at_once() -> None:
    document = copy.deepcopy(dict(super(LabApi, api).get_openapi_schema()))  # as ninja writes it
    rule = Exclusive(method="get", path=READ, name="x", fields=("offset", "nope"), description="")
    with pytest.raises(LookupError, match="no query parameter nope"):
        rewrite(document, rule)


def test_a_group_in_the_path_has_the_rule_of_a_group_in_a_body() -> None:
    # The lab strips a group id; were a blank one schema-valid in the path, a client following the document
    # would be told "group is required" for a request the document calls valid.
    document = api.get_openapi_schema()
    for path in ("/api/labs/{slug}/groups/{group}", "/api/labs/{slug}/groups/{group}/reset-offsets"):
        for operation in document["paths"][path].values():
            (group,) = [p for p in operation["parameters"] if p["name"] == "group"]
            pattern = group["schema"]["pattern"]
            assert pattern == limits.GROUP_ID.json_pattern
            assert re.search(pattern, " \r") is None
            assert re.search(pattern, "billing readers") is not None
