"""Driving a scenario: the virtual-time budget holds inside a long wait, a run can be interrupted and
resumed, and a step Kafka refuses fails with Kafka's error."""

from __future__ import annotations

from pathlib import Path

from lab.scenarios import parse
from lab.scenarios.runner import ScenarioRun, cluster_for, drive, run_to_end

LONG_WAIT = """\
name: A long wait
cluster: {brokers: 1}
steps:
  - create_topic: t
  - wait: 3600000
  - note: never reached
"""


def test_the_virtual_time_budget_holds_inside_a_long_wait() -> None:
    report = run_to_end(parse(LONG_WAIT), max_virtual_ms=5_000)
    assert report.time_ms == report.run.start_ms + 5_000  # stopped inside the wait, at the budget
    assert not report.passed
    results = report.run.results
    assert [r.ok for r in results] == [True, False]
    assert "ran past 5000 ms of virtual time" in results[-1].detail
    assert report.run.done


def test_an_interrupted_run_says_why_and_goes_on_from_where_it_stopped(tmp_path: Path) -> None:
    scenario = parse(
        "name: Steps\ncluster: {brokers: 1}\nsteps:\n  - create_topic: t\n  - wait: 200\n"
        "  - produce: {topic: t, count: 3, acks: '1'}\n  - expect: {partition: t-0, hw: 3}\n"
    )
    cluster = cluster_for(scenario, tmp_path)
    try:
        run = ScenarioRun(scenario, cluster)
        calls = 0

        def interrupt() -> str | None:
            nonlocal calls
            calls += 1
            return "time slice over" if calls == 3 else None

        assert drive(run, interrupt=interrupt) == "time slice over"
        assert not run.done
        assert cluster.now_ms < 200  # stopped between engine steps inside the wait
        assert drive(run) is None
        assert run.passed, [r.to_dict() for r in run.results]
    finally:
        cluster.close()


def test_abort_fails_the_step_under_way_and_runs_nothing_after_it(tmp_path: Path) -> None:
    scenario = parse(LONG_WAIT)
    cluster = cluster_for(scenario, tmp_path)
    try:
        run = ScenarioRun(scenario, cluster)
        assert drive(run, interrupt=lambda: "cancelled" if cluster.now_ms > 100 else None) == "cancelled"
        run.abort("cancelled by its owner")
        assert run.done
        assert [(r.label, r.ok, r.detail) for r in run.results] == [
            ("create topic t (1 partitions, RF 1)", True, ""),
            ("wait 3600000 ms", False, "cancelled by its owner"),
        ]
        assert drive(run) is None  # nothing left to run
    finally:
        cluster.close()


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


def test_admin_steps_keep_the_facades_bounds_and_errors(tmp_path: Path) -> None:
    scenario = parse(
        "name: admin\ncluster: {brokers: 2}\nsteps:\n"
        "  - create_topic: {name: t, partitions: 2, replication_factor: 2}\n"
        "  - delete_topic: nope\n"
        "  - set_config: {topic: t, config: {retention.ms: soon}}\n"
        "  - add_partitions: {topic: t, total: 1}\n"
        "  - set_config: {topic: u, config: {retention.ms: 60000}}\n"
        "  - create_topic: {name: u, partitions: 1, replication_factor: 2}\n"
        "  - set_config: {topic: u, config: {retention.ms: 60000}}\n"
        "  - add_partitions: {topic: u, total: 3}\n"
        "  - delete_topic: t\n"
        "  - kill: 2\n"
        "  - create_topic: {name: stranded, assignment: {0: [2]}}\n"
        "  - delete_topic: u\n"
        "  - note: the end\n",
        source="admin.yaml",
    )
    cluster = cluster_for(scenario, tmp_path)
    try:
        run = ScenarioRun(scenario, cluster)
        assert drive(run) is None
        results = run.results
        oks = [True, False, False, False, False, True, True, True, True, True, False, False, True]
        assert [r.ok for r in results] == oks
        assert results[1].detail == "UNKNOWN_TOPIC_OR_PARTITION: Topic 'nope' does not exist."
        assert results[2].detail.startswith("INVALID_CONFIG: ")
        assert results[3].detail == (
            "INVALID_PARTITIONS: Topic currently has 2 partitions, which is higher than the requested 1."
        )
        assert results[4].detail == "UNKNOWN_TOPIC_OR_PARTITION: Topic 'u' does not exist."
        # Its only replica is on a dead broker: no leader, and the step gives up when the facade would.
        assert results[10].detail == (
            "TIMEOUT: timed out after 30000 ms waiting for every partition of stranded to have a leader"
        )
        assert 30_000 < results[11].time_ms - results[10].time_ms < 30_100  # ZooKeeper's answer, then 30 s
        # u has a replica on the dead broker: Kafka's controller keeps it, marked for deletion, until
        # that broker is back.
        assert results[11].detail == (
            "TIMEOUT: timed out after 30000 ms waiting for topic u to be deleted "
            "(the controller deletes it once every replica's broker is up)"
        )
        assert cluster.topics() == ["stranded", "u"]  # written to ZooKeeper, as Kafka leaves them
    finally:
        cluster.close()


def test_transaction_steps_commit_abort_and_fail_out_of_order_with_kafkas_error() -> None:
    scenario = parse(
        "name: Transactions\ncluster: {brokers: 3}\nsteps:\n"
        "  - create_topic: {name: t, replication_factor: 3}\n"
        "  - begin_transaction: {producer: app}\n"
        "  - produce: {topic: t, count: 2, value: 'kept-{i}', producer: app}\n"
        "  - commit_transaction: app\n"
        "  - begin_transaction: app\n"
        "  - produce: {topic: t, count: 2, value: 'dropped-{i}', producer: app}\n"
        "  - abort_transaction: app\n"
        "  - consume: {topic: t, isolation_level: read_committed, as: seen, timeout_ms: 1000}\n"
        "  - expect: {consumed: {as: seen, values: [kept-0, kept-1]}, partition: t-0, lso: 6}\n"
        "  - commit_transaction: app\n"
    )
    report = run_to_end(scenario)
    results = report.run.results
    assert [r.ok for r in results] == [True] * 9 + [False]
    assert "ILLEGAL_STATE" in results[-1].detail
    assert "from state READY to state COMMITTING_TRANSACTION" in results[-1].detail


def test_expect_error_passes_only_with_that_error_and_transaction_expectations_can_fail() -> None:
    scenario = parse(
        "name: Fencing\ncluster: {brokers: 3}\nsteps:\n"
        "  - create_topic: {name: t, replication_factor: 3}\n"
        "  - begin_transaction: {producer: old, transactional_id: tx}\n"
        "  - produce: {topic: t, count: 1, producer: old}\n"
        "  - begin_transaction: {producer: new, transactional_id: tx}\n"
        "  - abort_transaction: {producer: old, expect_error: PRODUCER_FENCED}\n"
        "  - commit_transaction: {producer: new, expect_error: PRODUCER_FENCED}\n"
        "  - begin_transaction: {producer: old, expect_error: INVALID_TXN_STATE}\n"
        "  - expect: {transaction: {id: tx, state: Ongoing, producer_epoch: 2}}\n"
        "  - expect: {transaction: {id: nobody}}\n"
    )
    results = run_to_end(scenario).run.results
    assert [r.ok for r in results] == [True, True, True, True, True, False, False, False, False]
    assert "PRODUCER_FENCED, as expected" in results[4].detail
    assert "expected PRODUCER_FENCED" in results[5].detail  # the new producer's call is refused otherwise
    assert "expected INVALID_TXN_STATE, got PRODUCER_FENCED" in results[6].detail
    (state, epoch) = results[7].checks
    assert (state.expected, state.actual, epoch.ok) == ("Ongoing", "Empty", True)
    assert [(c.what, c.ok) for c in results[8].checks] == [("transaction nobody has a coordinator", False)]
