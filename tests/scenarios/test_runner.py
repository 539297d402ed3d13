"""Running a scenario's steps: a step Kafka refuses fails with Kafka's error, and says so."""

from __future__ import annotations

from lab.scenarios import parse, run_to_end


def test_a_topic_step_kafka_refuses_fails_with_kafkas_error() -> None:
    scenario = parse(
        "name: refused\nsteps:\n"
        "  - create_topic: {name: __consumer_offsets}\n"
        "  - create_topic: {name: a.b}\n"
        "  - create_topic: {name: a_b}\n",
        source="refused.yaml",
    )
    results = run_to_end(scenario).run.results
    assert [r.ok for r in results] == [False, True, False]
    assert "INVALID_TOPIC_EXCEPTION: Topic '__consumer_offsets' is an internal topic" in results[0].detail
    assert "INVALID_TOPIC_EXCEPTION: Topic 'a_b' collides with existing topics: a.b" in results[2].detail
