"""Template helpers."""

from __future__ import annotations

from django.template.defaultfilters import floatformat

from lab.templatetags.lab_extras import clock, domid, get, stats_of, tenths
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


def test_tenths_write_a_number_as_floatformat_minus_one_does_in_english() -> None:
    values: list[object] = [0, 3, -3, 0.0, 2.5, 2.96, 2.94, 0.05, 0.15, 0.25, 1.35, -1.25, -0.04, 12345.65]
    values += [n / 100 for n in range(-300, 300, 7)] + [n / 3 for n in range(50)] + [10**7 + 0.45, "7"]
    for value in values:
        assert tenths(value) == floatformat(value, "-1"), value
    assert tenths(None) == ""
    assert tenths("not a number") == ""
