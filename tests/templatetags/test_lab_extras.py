"""Template helpers."""

from __future__ import annotations

from lab.templatetags.lab_extras import clock, domid, get, stats_of
from lab.visuals.clients import ClientStats


def test_get_looks_up_a_key_and_is_empty_when_missing() -> None:
    assert get({"leader": "The leader."}, "leader") == "The leader."
    assert get({}, "x") == ""
    assert get(None, "x") == ""


def test_names_become_safe_ids() -> None:
    assert domid("orders") == "orders"
    assert domid("my topic/1") == "my_topic_1"
    assert domid("a.b-c_d") == "a.b-c_d"


def test_stats_of_a_client() -> None:
    stats = ClientStats(rows=(("p", (("sent", "3"),)),))
    assert stats_of(stats, "p") == (("sent", "3"),)
    assert stats_of(stats, "q") == ()
    assert stats_of(None, "p") == ()


def test_a_moment_of_virtual_time_reads_like_the_clock() -> None:
    assert clock(214_019) == "3:34.019"
    assert clock("5") == "0:00.005"
    assert clock(None) == "—"
