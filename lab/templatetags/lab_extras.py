"""Small template helpers for the live views."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.safestring import SafeString, mark_safe

from lab.visuals.clock import clock_label
from lab.visuals.markup import dom_id, partition_html

register = template.Library()


@register.filter
def get(mapping: Mapping[str, Any] | None, key: Any) -> Any:
    """``{{ tips|get:"leader" }}``: a mapping's value, or "" when it is missing."""
    if mapping is None:
        return ""
    return mapping.get(key, "")


@register.filter
def domid(text: Any) -> str:
    """A topic or client name made safe for an HTML id."""
    return dom_id(str(text))


@register.filter
def stats_of(stats: Any, name: str) -> Any:
    return stats.of(name) if stats is not None else ()


@register.filter
def clock(time_ms: Any) -> str:
    """``{{ r.time_ms|clock }}``: a moment of virtual time as the lab's clock shows it ("3:34.019")."""
    if time_ms is None or time_ms == "":
        return "—"
    return clock_label(int(time_ms))


@register.simple_tag(takes_context=True)
def plog_partition(context: template.Context, topic: Any, partition: Any) -> SafeString:
    """One partition of a partition log (``lab.visuals.markup``): through the lab's renderer, which
    draws it again only when it changed (``lab.labs.TemplateRenderer.partition``), else drawn here."""
    tip = context.get("tip", {})
    draw = context.get("draw_partition")
    return mark_safe(
        draw(topic, partition, tip) if draw is not None else partition_html(topic, partition, tip)
    )
