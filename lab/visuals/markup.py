"""The fragments a busy lab draws in every frame, as HTML built with plain strings, every value escaped.

A partition of a partition log (the page's ``plog-<topic>-<partition>``) is most of what a busy lab
draws: each frame redraws every partition whose records moved, three replica rows of offsets, markers
and fetches in flight. The clock, the frame's marker and the clients' counters are small, but drawn in
every frame too. Django's template engine spent ten times the time of the markup itself resolving
variables and rendering nodes, so these are built here, the same HTML the templates drew (the rest of
the page stays in ``lab/live.html``, which includes a partition through ``{% plog_partition t p %}``;
``lab.labs.TemplateRenderer`` draws the others with ``PLAIN``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from html import escape
from typing import Any

from lab.visuals.charts import Charts
from lab.visuals.clients import ClientStats
from lab.visuals.clock import ClockTime, clock_label
from lab.visuals.groups import GroupsView, GroupView, Rebalance
from lab.visuals.partition_log import Flight, PartitionLog, ProducerRow, ReplicaLog, TopicLog

_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def dom_id(text: str) -> str:
    """An HTML id part from a topic or client name."""
    return _ID_UNSAFE.sub("_", text)


def _e(value: object) -> str:
    """A value as Django's template writes it with autoescape on and localization off."""
    if isinstance(value, float) and "e" in repr(value).lower():
        return escape(f"{Decimal(str(value)):f}")  # as Django writes 1e-05: 0.00001
    return escape(str(value))


@functools.cache
def _cell(letter: str) -> str:
    return f'<i class="k{escape(letter)}"></i>'


def offset_cells(cells: str) -> str:
    """A replica's offsets, one ``<i class="k<letter>">`` each."""
    return "".join(map(_cell, cells))


def partition_html(topic: TopicLog, p: PartitionLog, tip: Mapping[str, str]) -> str:
    """``p`` of ``topic`` as the page draws it; ``tip``: the partition logs' tooltips."""
    t_tip = topic.tip
    name = _e(topic.topic)
    rows = len(p.replicas)
    leader = f"leader {_e(p.leader)}" if p.leader is not None else '<b class="bad-text">✕ offline</b>'
    under = (
        f'<span class="badge bad under-min-isr" title="{_e(p.min_isr_title)}"><span aria-hidden="true">✕</span>'
        " under min ISR: acks=all fails</span>"
        if p.under_min_isr
        else ""
    )
    earlier = (
        f'<span class="earlier muted">{_e(p.earlier)} older offset{"" if p.earlier == 1 else "s"} not drawn</span>'
        if p.earlier
        else ""
    )
    axis = "".join(f'<span style="--at: {_e(i)}">{_e(o)}</span>' for i, o in p.axis)
    replicas = "".join(_replica(r, row, tip, t_tip) for row, r in enumerate(p.replicas))
    flights = "".join(_flight(f) for f in p.flights)
    producers = (
        f'\n    <ul class="producers" aria-label="Idempotent producers of {name}-{_e(p.partition)}"'
        f' title="{_e(tip.get("producer_state", ""))}">\n      {"".join(map(_producer, p.producers))}\n    </ul>\n    '
        if p.producers
        else ""
    )
    return (
        f'\n  <div class="partition-log" id="plog-{_e(dom_id(topic.topic))}-{_e(p.partition)}"'
        f' data-partition="{_e(p.partition)}" style="--cols: {_e(p.width)}; --rows: {rows}">\n'
        "    <header>\n"
        f"      <h3>{name}-{_e(p.partition)}</h3>\n"
        f'      <span class="pmeta">{leader} · <span title="{_e(tip.get("leader_epoch", ""))}">leader epoch'
        f' {_e(p.leader_epoch)}</span> · <span title="{_e(t_tip.get("high_watermark", ""))}">min.insync.replicas'
        f" {_e(p.min_insync_replicas)}</span></span>\n"
        f"      {under}\n"
        f"      {earlier}\n"
        "    </header>\n"
        '    <div class="rows">\n'
        f'      <div class="axis" aria-hidden="true">{axis}</div>\n'
        f"      {replicas}\n"
        f'      <svg class="lane" aria-label="Fetches in flight" role="img" style="--rows: {rows}">\n'
        f"        <title>{_e(tip.get('in_flight', ''))}</title>\n"
        f"        {flights}\n"
        "      </svg>\n"
        "    </div>\n"
        f"    {producers}\n"
        "  </div>\n"
    )


def _replica(r: ReplicaLog, row: int, tip: Mapping[str, str], t_tip: Mapping[str, str]) -> str:
    classes = f"rlog role-{_e(r.role)}{'' if r.in_isr else ' out-isr'}{'' if r.online else ' offline'}"
    title = _e(r.title)
    out_isr = "" if r.in_isr else '<span class="oi" title="out of the ISR">∉</span>'
    markers = "".join(
        f'<span class="m {_e(m.kinds)}" style="--at: {_e(m.at)}" title="{_e(m.title)}">{_e(m.label)}</span>'
        for m in r.markers
    )
    lso = (
        f'<span class="lso" title="{_e(tip.get("last_stable_offset", ""))}">LSO {_e(r.last_stable_offset)}</span> '
        if r.last_stable_offset < r.high_watermark
        else ""
    )
    epoch = "no epoch" if r.leader_epoch < 0 else f"e{_e(r.leader_epoch)}"
    behind = f' <span class="behind">\N{MINUS SIGN}{_e(r.behind)}</span>' if r.behind else ""
    return (
        f'\n      <div class="{classes}" data-broker="{_e(r.broker)}" data-log-start="{_e(r.log_start_offset)}"'
        f' data-hw="{_e(r.high_watermark)}" data-leo="{_e(r.log_end_offset)}" data-lso="{_e(r.last_stable_offset)}"'
        f' data-epoch="{_e(r.leader_epoch)}" style="--row: {row}">\n'
        f'        <span class="who" title="{title}">b{_e(r.broker)} <span class="rl">'
        f"{'L' if r.role == 'leader' else 'F'}</span>{out_isr}</span>\n"
        f'        <span class="track" title="{title}">\n'
        f'          <span class="cells">{offset_cells(str(r.cells))}</span>\n'
        f"          {markers}\n"
        "        </span>\n"
        f'        <span class="nums">{lso}<span title="{_e(t_tip.get("high_watermark", ""))}">HW {_e(r.high_watermark)}'
        f'</span> <span title="{_e(t_tip.get("log_end_offset", ""))}">LEO {_e(r.log_end_offset)}</span>'
        f' <span title="{_e(tip.get("leader_epoch", ""))}">{epoch}</span>{behind}</span>\n'
        "      </div>\n      "
    )


def _flight(f: Flight) -> str:
    kind = ("resp" if f.response else "req") + (" still" if f.remaining_s is None else "")
    duration = 0 if f.remaining_s is None else f.remaining_s
    return (
        f'\n        <g class="flight {kind}" data-src="{_e(f.src)}" data-dst="{_e(f.dst)}"'
        f' style="--y0: {_e(f.y_now)}; --y1: {_e(f.dst_row)}; --dur: {_e(duration)}s">\n'
        f"          <title>{_e(f.label)}</title>\n"
        '          <circle r="5" cx="12"/>\n'
        "        </g>\n        "
    )


def _producer(pr: ProducerRow) -> str:
    return (
        f'<li class="producer" data-producer-id="{_e(pr.producer_id)}" data-producer-epoch="{_e(pr.producer_epoch)}"'
        f' data-last-sequence="{_e(pr.last_sequence)}" title="{_e(pr.title)}">idempotent producer'
        f" <b>{_e(pr.producer_id)}</b> · epoch {_e(pr.producer_epoch)} · last sequence <b>{_e(pr.last_sequence)}</b>"
        f' <span class="muted">(offset {_e(pr.last_offset)})</span></li>'
    )


def clock_time_html(v: ClockTime) -> str:
    """The lab's clock (``#clock-time``); the page runs it on at ``rate`` between frames."""
    return (
        f'\n<span id="clock-time" hx-swap-oob="true" class="clock-time{" paused" if v.paused else ""}"'
        f' data-time-ms="{_e(v.time_ms)}" data-rate="{_e(v.rate)}"'
        f' title="Virtual time since the cluster started (minutes:seconds.milliseconds)">{_e(v.label)}</span>\n'
    )


def frame_html(v: Any) -> str:
    """The frame's marker (``#lab-frame``: its number, virtual time, and when its state was read)."""
    return (
        f'\n<div id="lab-frame" hx-swap-oob="true" hidden data-frame="{_e(v.seq)}" data-time-ms="{_e(v.time_ms)}"'
        f' data-made-at="{v.made_at:.6f}" data-event-at="{v.event_at:.6f}"></div>\n'
    )


def client_stats_html(v: ClientStats) -> str:
    """Each client's counters, swapped by its own id (``#client-stats-<name>``)."""
    return "".join(
        f'<span id="client-stats-{_e(dom_id(name))}" class="stats" hx-swap-oob="true">'
        + "".join(f"<span><b>{_e(value)}</b> {_e(label)}</span> " for label, value in stats)
        + "</span>"
        for name, stats in v.rows
    )


def tenths(value: object) -> str:
    """A number to one decimal, none when it is whole ("3", "2.5", "3.0" for 2.96), as Django's
    ``floatformat:"-1"`` writes it in English. Without Django's localization, which looks the language
    up under a lock every process-wide: a worker's labs drawing at once queued on that lock."""
    try:
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(str(value))
    except InvalidOperation:
        return ""
    if not number.is_finite():
        return str(value)
    if number == number.to_integral_value():
        return str(int(number))
    rounded = number.quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return str(abs(rounded) if rounded == 0 else rounded)  # "0.0", never "-0.0"


def charts_html(v: Charts) -> str:
    """The charts (``#charts``): a new sample every frame moves every line."""
    w, h, window = _e(v.width), _e(v.height), _e(v.window_s)
    middle = str(round(1 / 2 * v.height))  # as Django's {% widthratio 1 2 height %}
    figures = []
    for c in v.charts:
        last = ",".join(_e(s.last) for s in c.series)
        lines = "".join(
            f'<polyline class="line s{i}" points="{_e(s.points)}" stroke-dasharray="{_e(s.dash)}"/>'
            for i, s in enumerate(c.series)
            if s.points
        )
        legend = (
            "".join(
                f'<li><svg width="22" height="8" aria-hidden="true"><line class="line s{i}" x1="1" x2="21" y1="4"'
                f' y2="4" stroke-dasharray="{_e(s.dash)}"/></svg> <b>{_e(tenths(s.last))}</b> {_e(s.label)}</li>'
                for i, s in enumerate(c.series)
            )
            or '<li class="muted">no group yet</li>'
        )
        figures.append(
            f'\n  <figure class="chart" id="chart-{_e(c.key)}" data-last="{last}">\n'
            f'    <figcaption><span class="ctitle" title="{_e(c.note)}">{_e(c.title)}</span>'
            f' <span class="muted">{_e(c.unit)}</span></figcaption>\n'
            '    <div class="plot">\n'
            f'      <span class="ylab top">{_e(tenths(c.y_max))}</span>\n'
            '      <span class="ylab bottom">0</span>\n'
            f'      <svg viewBox="0 0 {w} {h}" preserveAspectRatio="none" role="img"'
            f' aria-label="{_e(c.title)} over the last {window} virtual seconds">\n'
            f"        <title>{_e(c.note)}</title>\n"
            f'        <line class="grid" x1="0" x2="{w}" y1="0.5" y2="0.5"/>\n'
            f'        <line class="grid" x1="0" x2="{w}" y1="{middle}" y2="{middle}"/>\n'
            f'        <line class="grid base" x1="0" x2="{w}" y1="{h}" y2="{h}"/>\n'
            f"        {lines}\n"
            "      </svg>\n"
            f'      <span class="xlab left">\N{MINUS SIGN}{window} s</span>\n'
            '      <span class="xlab right">now (virtual time)</span>\n'
            "    </div>\n"
            '    <ul class="series">\n'
            f"      {legend}\n"
            "    </ul>\n"
            "  </figure>\n  "
        )
    return f'\n<div id="charts" hx-swap-oob="true" class="charts">\n  {"".join(figures)}\n</div>\n'


def _or(value: object, empty: str) -> str:
    """``value``, or ``empty`` for None (Django's ``default_if_none``)."""
    return empty if value is None else _e(value)


def _joined(items: tuple[str, ...]) -> str:
    return ", ".join(_e(i) for i in items)


def groups_html(v: GroupsView) -> str:
    """The consumer groups (``#groups``): members, owners, committed offsets and lag, rebalances."""
    tips = v.tip
    empty = (
        '\n    <p class="empty">No consumer group yet. Add a simulated consumer (below), or connect a real'
        " consumer with a group.id, and it joins one.</p>\n  "
        if not v.groups
        else ""
    )
    groups = "".join(_group(g, tips) for g in v.groups)
    return f'\n<div id="groups" hx-swap-oob="true" class="groups">\n  {empty}\n  {groups}\n</div>\n'


def _group(g: GroupView, tips: Mapping[str, str]) -> str:
    lag_tip = _e(tips.get("lag", ""))
    coordinator = (
        f'<span class="muted" title="{_e(tips.get("coordinator", ""))}">coordinator broker {_e(g.coordinator)}</span>'
        if g.coordinator is not None
        else ""
    )
    rows = "".join(
        f'\n          <tr data-partition="{_e(o.topic)}-{_e(o.partition)}"><th scope="row">{_e(o.topic)}-{_e(o.partition)}'
        f'</th><td>{_e(o.owner) if o.owner else "—"}</td><td class="num">{_or(o.committed, "—")}</td>'
        f'<td class="num">{_or(o.lag, "—")}</td></tr>\n        '
        for o in g.partitions
    ) or (
        '\n          <tr><td colspan="4" class="muted">No partition assigned or committed yet.</td></tr>\n        '
    )
    members = (
        "".join(
            f'\n          <li title="member id {_e(m.member_id)}"><b>{_e(m.client_id)}</b>'
            f' <span class="muted mono">…{_e(m.short_id)}</span>'
            + (
                f' <span class="muted" title="A real Kafka client, connected from this host (see Clients)">from {_e(m.host)}</span>'
                if m.host
                else ""
            )
            + (
                ' <span class="badge" title="The member that computes the assignment for the group">leader</span>'
                if m.leader
                else ""
            )
            + f": {_joined(m.partitions) or 'nothing assigned'}</li>\n        "
            for m in g.members
        )
        or '\n          <li class="muted">none</li>\n        '
    )
    rebalances = (
        "".join(map(_rebalance, g.rebalances)) or '\n        <li class="muted">No rebalance yet.</li>\n      '
    )
    gid = _e(g.group_id)
    return (
        f'\n  <article class="group" id="group-{_e(dom_id(g.group_id))}" data-group="{gid}"'
        f' data-generation="{_e(g.generation)}" data-state="{_e(g.state)}">\n'
        "    <header>\n"
        f"      <h3>{gid}</h3>\n"
        f'      <span class="badge state-{_e(g.state.lower())}">{_e(g.state)}</span>\n'
        f'      <span title="{_e(tips.get("group_generation", ""))}">generation <b>{_e(g.generation)}</b></span>\n'
        f'      <span class="muted">assignor {_e(g.assignor)}</span>\n'
        f"      {coordinator}\n"
        f'      <span title="{lag_tip}">lag <b>{_e(g.total_lag)}</b></span>\n'
        "    </header>\n"
        '    <div class="group-body">\n'
        '      <table class="compact owners">\n'
        '        <thead><tr><th scope="col">Partition</th><th scope="col">Owner</th>'
        f'<th scope="col" title="{_e(tips.get("committed", ""))}">Committed</th>'
        f'<th scope="col" title="{lag_tip}">Lag</th></tr></thead>\n'
        "        <tbody>\n"
        f"        {rows}\n"
        "        </tbody>\n"
        "      </table>\n"
        '      <div class="members">\n'
        f"        <h4>Members ({len(g.members)})</h4>\n"
        "        <ul>\n"
        f"        {members}\n"
        "        </ul>\n"
        "      </div>\n"
        "    </div>\n"
        f'    <details class="rebalances" id="rebalances-{_e(dom_id(g.group_id))}" data-keep open>\n'
        f"      <summary>Rebalances ({len(g.rebalances)} latest)</summary>\n"
        "      <ol>\n"
        f"      {rebalances}\n"
        "      </ol>\n"
        "    </details>\n"
        "  </article>\n  "
    )


def _rebalance(r: Rebalance) -> str:
    n = len(r.members)
    members = f"{n} member{'' if n == 1 else 's'}" + (
        f': <span class="mono">{_joined(r.members)}</span>' if r.members else ""
    )
    abandoned = (
        '<span class="badge warn abandoned" title="Its members never took their partitions: a new rebalance'
        f' began first">! abandoned: {_e(r.abandoned)}</span>'
        if r.abandoned
        else ""
    )
    changes = "".join(
        f'<li data-member="{_e(c.member_id)}"><b class="mono" title="client {_e(c.client)}">{_e(c.member_id)}</b>'
        + (" left" if c.left else "")
        + (f': gave up <span class="gave">{_joined(c.gave)}</span>' if c.gave else "")
        + (f'{";" if c.gave else ":"} received <span class="got">{_joined(c.got)}</span>' if c.got else "")
        + "</li>"
        for c in r.changes
    )
    when = "—" if r.time_ms is None else clock_label(int(r.time_ms))
    return (
        f'\n        <li class="rebalance" data-generation="{_e(r.generation)}" title="{_e(r.text)}">\n'
        f'          <span class="gen">gen {_e(r.generation)}</span> <span class="muted" title="Virtual time, as the'
        f' clock shows it">{_e(when)}</span> <span class="reason">{_e(r.reason)}</span>\n'
        f'          <span class="muted members">{members}</span>\n'
        f"          {abandoned}\n"
        f"          <ul>{changes}</ul>\n"
        "        </li>\n      "
    )


# The fragments drawn here, by their view's key (each from its view model).
PLAIN: dict[str, Callable[[Any], str]] = {
    "clock-time": clock_time_html,
    "frame": frame_html,
    "client-stats": client_stats_html,
    "charts": charts_html,
    "groups": groups_html,
}
