"""Small template helpers for the live views."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from lab.labs import dom_id
from lab.visuals.clock import clock_label

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
def offset_cells(cells: str) -> SafeString:
    """``{{ r.cells|offset_cells }}``: a replica's offset cells, one ``<i class="k<letter>">`` per offset
    (drawn every frame for every replica, so in one join rather than a template loop)."""
    return mark_safe("".join(map(_cell, str(cells))))


@functools.cache
def _cell(letter: str) -> str:
    return f'<i class="k{escape(letter)}"></i>'
