"""Small template helpers for the live views."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
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


@register.filter
def tenths(value: Any) -> str:
    """``{{ rate|tenths }}``: a number to one decimal, none when it is whole ("3", "2.5", "3.0" for
    2.96), as Django's ``floatformat:"-1"`` writes it in English. Without Django's localization, which
    looks the language up under a lock every process-wide: a frame draws its charts' figures with it,
    and a worker's labs drawing at once queued on that lock more than they drew."""
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


@register.simple_tag(takes_context=True)
def plog_partition(context: template.Context, topic: Any, partition: Any) -> SafeString:
    """One partition of a partition log (``lab.visuals.markup``): through the lab's renderer, which
    draws it again only when it changed (``lab.labs.TemplateRenderer.partition``), else drawn here."""
    tip = context.get("tip", {})
    draw = context.get("draw_partition")
    return mark_safe(
        draw(topic, partition, tip) if draw is not None else partition_html(topic, partition, tip)
    )
