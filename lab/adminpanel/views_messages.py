"""The message browser of a topic: records by partition from an offset, a time or the newest, a
search in keys and values, paging, a live tail (the results poll every second), export of what
is shown as JSON or CSV, and a produce form.

Records are read at the partition's leader below its high watermark, as a consumer sees them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.http import Http404, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from lab.adminpanel import export, rows
from lab.adminpanel.forms import PAGE_SIZES, BrowseForm, ProduceForm, Query
from lab.adminpanel.panel import Panel, panel_view
from lab.engine.errors import IllegalArgument, KafkaError
from lab.request_size import reads_too_large, too_large, too_large_message


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """One page of the message browser, as the lab's ``messages`` command answers it: the records and
    where they sit in the partition's log."""

    topic: str
    partition: int
    leader: int
    log_start_offset: int
    high_watermark: int
    log_end_offset: int
    records: list[dict[str, Any]]
    start: int  # the offset the read started from
    full: bool  # as many records as asked: there may be more after


TEMPLATE = "adminpanel/messages.html"
CHANGED = {"HX-Trigger": "lab-changed"}
SHOWN_CHARS = 300  # of a key or value in the table (the export has them whole)


def marked(text: str | None, search: str) -> list[tuple[str, bool]]:
    """``text`` (cut to what the table shows) in pieces, each saying whether it is a match of ``search``."""
    if text is None:
        return []
    shown = text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"
    if not search:
        return [(shown, False)]
    out: list[tuple[str, bool]] = []
    at = 0
    while (found := shown.find(search, at)) >= 0:
        if found > at:
            out.append((shown[at:found], False))
        out.append((search, True))
        at = found + len(search)
    if at < len(shown):
        out.append((shown[at:], False))
    return out


async def _partitions(panel: Panel, topic: str) -> rows.TopicDetail:
    detail = rows.topic_detail(await panel.call("snapshot"), topic)
    if detail is None:
        raise Http404(f"There is no topic {topic} in this lab.")
    return detail


async def _read(panel: Panel, topic: str, form: BrowseForm) -> tuple[Query, Page | None, str]:
    """The selection, and its page of records or why there is none (the error also lands beside its field)."""
    if not form.is_valid():
        return Query(), None, ""
    q = form.query()
    try:
        args = {
            "topic": topic,
            "partition": q.partition,
            "start": q.start,
            "offset": q.offset,
            "time_ms": q.time_ms,
            "search": q.search,
            "limit": q.limit,
        }
        page = Page(**await panel.call("messages", args))
    except KafkaError as error:
        form.attach(error)
        return q, None, str(error)
    return q, page, ""


def _results_context(
    panel: Panel, topic: str, form: BrowseForm, read: tuple[Query, Page | None, str]
) -> dict[str, Any]:
    q, page, error = read
    base = reverse("adminpanel:messages", kwargs={"slug": panel.lab.slug, "topic": topic})
    links: dict[str, str] = {}
    if page is not None and not q.tail:
        if page.records and page.full:
            links["next"] = "?" + urlencode(
                q.params(start="offset", offset=page.records[-1]["offset"] + 1, time=None)
            )
        if page.start > page.log_start_offset and not q.search and q.start != "newest":
            links["previous"] = "?" + urlencode(
                q.params(start="offset", offset=max(page.log_start_offset, page.start - q.limit), time=None)
            )
        if page.start > page.log_start_offset or q.start != "offset":
            links["first"] = "?" + urlencode(q.params(start="offset", offset=None, time=None))
    return {
        "topic_name": topic,
        "form": form,
        "query": q,
        "page": page,
        "records": [
            {
                **r,
                "time_label": rows.time_label(r["timestamp"]),
                "key_parts": marked(r["key"], q.search),
                "value_parts": marked(r["value"], q.search),
            }
            for r in (page.records if page is not None else ())
        ],
        "page_sizes": PAGE_SIZES,
        "browse_fields": [(name, form[name]) for name in ("partition", "offset", "time", "search")],
        "oob": bool(panel.request.headers.get("HX-Request")),
        "error": error,
        "links": links,
        "base": base,
        "params": urlencode(q.params()),
        "records_url": base + "records/",
    }


@require_GET
@panel_view()
async def messages(panel: Panel, topic: str) -> HttpResponse:
    detail = await _partitions(panel, topic)
    count = len(detail.partitions)
    form = BrowseForm(panel.request.GET or None, partitions=count)
    if not form.is_bound:
        form = BrowseForm({"partition": "0", "start": "offset", "limit": "50"}, partitions=count)
    read = await _read(panel, topic, form)
    produce = ProduceForm(partitions=count, initial={"acks": "all", "count": "1"})
    return panel.render(
        TEMPLATE,
        {
            **_results_context(panel, topic, form, read),
            "topic": detail,
            "produce_form": produce,
        },
        status=400 if form.errors else 200,
    )


@require_GET
@panel_view()
async def records(panel: Panel, topic: str) -> HttpResponse:
    """The results alone (the browse form, paging links and the live tail fetch this)."""
    detail = await _partitions(panel, topic)
    form = BrowseForm(panel.request.GET, partitions=len(detail.partitions))
    read = await _read(panel, topic, form)
    context = _results_context(panel, topic, form, read)
    # The address bar follows the selection, so a reload or a shared link shows the same records.
    headers = {"HX-Push-Url": context["base"] + "?" + context["params"]} if read[1] is not None else None
    return panel.render(f"{TEMPLATE}#results", context, status=400 if form.errors else 200, headers=headers)


@require_GET
@panel_view()
async def export_records(panel: Panel, topic: str, fmt: str) -> HttpResponse:
    """The records the browser shows for this selection, as a download."""
    if fmt not in export.FORMATS:
        raise Http404(f"Export as {', '.join(export.FORMATS)}.")
    detail = await _partitions(panel, topic)
    form = BrowseForm(panel.request.GET, partitions=len(detail.partitions))
    _, page, error = await _read(panel, topic, form)
    if page is None:
        problems = error or " ".join(e for errs in form.errors.values() for e in errs)
        return HttpResponse(problems, status=400, content_type="text/plain; charset=utf-8")
    found = list(page.records)
    body = export.to_json(found) if fmt == "json" else export.to_csv(found)
    content_type = "application/json" if fmt == "json" else "text/csv; charset=utf-8"
    response = HttpResponse(body, content_type=content_type)
    name = export.filename(panel.lab.slug, topic, page.partition, found, fmt)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@reads_too_large
@require_POST
@panel_view(act=True)
async def produce(panel: Panel, topic: str) -> HttpResponse:
    detail = await _partitions(panel, topic)
    count = len(detail.partitions)
    form = ProduceForm(panel.request.POST, partitions=count)
    context: dict[str, Any] = {"topic": detail, "produce_form": form}
    size = too_large(panel.request)
    if size:
        # Nothing of the form was read: say so beside the value, the field that can grow that large.
        form.is_valid()
        form.add_error("value", too_large_message(size))
        return panel.render(f"{TEMPLATE}#produce-form", context, status=413)
    if not form.is_valid():
        return panel.render(f"{TEMPLATE}#produce-form", context, status=400)
    data = form.cleaned_data
    key = str(data.get("key") or "") or None
    value = None if data.get("tombstone") else str(data.get("value") or "")
    try:
        args = {
            "topic": topic,
            "key": key,
            "value": value,
            "partition": data["partition"],
            "acks": data["acks"],
            "count": data["count"],
        }
        said = await panel.call("records-send", args)
    except KafkaError as error:
        form.attach(error)
        return panel.render(
            f"{TEMPLATE}#produce-form", context, status=400 if isinstance(error, IllegalArgument) else 409
        )
    # Keep what was typed: producing a few more of the same is the common next step.
    context["done"] = said
    return panel.render(f"{TEMPLATE}#produce-form", context, headers=CHANGED)
