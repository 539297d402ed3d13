"""Tooltips: one sentence per marker, with the governing config's lab value beside Kafka's default."""

from __future__ import annotations

import pytest

from lab.engine.config import BROKER_KEYS, TOPIC_KEYS
from lab.visuals.glossary import ENTRIES, governed_by, lab_value, tip, tips


def test_isr_tip_names_the_config_with_the_lab_value_beside_kafkas() -> None:
    text = tip("out_of_isr", {})
    assert text.startswith("Out of the ISR:")
    assert "replica.lag.time.max.ms: lab 10000, Kafka 30000" in text


def test_the_labs_own_setting_wins_over_the_default() -> None:
    assert "zookeeper.session.timeout.ms: lab 1500, Kafka 18000" in tip(
        "session", {"zookeeper.session.timeout.ms": "1500"}
    )


def test_a_topic_key_falls_back_to_its_broker_key() -> None:
    assert lab_value("retention.ms", {"log.retention.ms": "1000"}) == "1000"
    assert lab_value("retention.ms", {}) == TOPIC_KEYS["retention.ms"].default


def test_every_marker_has_one_sentence_and_a_real_config_key() -> None:
    for marker, entry in ENTRIES.items():
        assert entry.sentence.endswith("."), marker
        assert ". " not in entry.sentence, f"{marker}: one sentence"
        if entry.config is not None:
            assert entry.config in BROKER_KEYS or entry.config in TOPIC_KEYS, marker
    assert set(tips({})) == set(ENTRIES)


def test_an_unknown_key_is_refused_by_name() -> None:
    with pytest.raises(KeyError, match=r"no config key 'acks\.typo'"):
        governed_by("acks.typo", {})
