"""``{% listeners_panel lab %}``: the lab page's panel for connecting one's own Kafka client
(``lab/_listeners.html``): ``bootstrap.servers``, snippets, each broker's listener. Drawn from the
lab's listeners as they are now; frames keep its live part (``lab/_listeners_live.html``) current."""

from __future__ import annotations

from django import template
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from lab.listening import LISTENERS_FRAGMENT, LISTENERS_VIEW, snippets_for, view_of
from lab.models import Lab
from lab.runtime.live import LiveLab
from lab.runtime.manager import runtime
from lab.visuals.frame import TopicIndex

register = template.Library()


@register.simple_tag(takes_context=True)
def listeners_panel(context: template.Context, lab: Lab) -> SafeString:
    live = runtime.get(lab.slug)
    if live is None:
        return mark_safe("")
    return mark_safe(panel(live))


def panel(live: LiveLab) -> str:
    """The panel of a running lab (any thread; a lab worker draws it for the web process's page)."""
    view = view_of(live)
    index = live.frame.views.get("plogs")
    topics = index.topics if isinstance(index, TopicIndex) else [t.name for t in live.spec.topics]
    ca_file = f"{live.slug}-ca.pem"
    return render_to_string(
        "lab/_listeners.html",
        {
            "v": view,
            "snippets": snippets_for(view, topics, ca_file),
            "ca_url": reverse("lab-ca", kwargs={"slug": live.slug}) if view.tls else "",
            "ca_file": ca_file,
            "live_html": render_to_string(LISTENERS_FRAGMENT, {"v": view, "key": LISTENERS_VIEW}),
        },
    )
