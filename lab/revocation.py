"""When someone's access to a lab may have ended, the lab pages they have open check again.

A page's websocket is authorized once, when it connects; without this, a follower of a demo that
ended, a deactivated account or an instructor made a student would go on receiving the lab's
frames. Whatever can take access away (a demo ending or deleted, a viewer leaving, an account
deactivated, deleted, given a new password or logged out, a role changed, a lab deleted) sends
``access.check`` to the channel-layer group of the lab or of the person, once the change is
committed; each ``LabConsumer`` in it asks ``ended(...)`` and, if access is gone, shows why and
closes. The in-memory layer reaches the pages of this process, which is every page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import HASH_SESSION_KEY, get_user_model
from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.utils.crypto import constant_time_compare

from lab import access
from lab.models import Lab
from lab.runtime.broadcast import broadcaster, group_name

ACCESS_CHECK = "access.check"


def user_group(pk: int) -> str:
    """The channel-layer group of a person's open lab pages."""
    return f"user.{pk}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Ending:
    """Why a page stops following its lab, as the page says it."""

    kind: str  # demo-ended, left, account, password, logged-out, deleted, access
    title: str
    text: str
    copy_url: str = ""  # the person's own copy of the demo, if they were handed one


def _send(group: str, **more: str) -> None:
    # After the commit, so the pages read the change (a delete's signals come inside its transaction).
    message = {"type": ACCESS_CHECK, **more}
    transaction.on_commit(lambda: broadcaster.send(group, message))


def recheck_lab(slug: str) -> None:
    _send(group_name(slug))


def recheck_user(pk: int, *, logged_out: str = "") -> None:
    """``logged_out``: the session key that just logged out (its pages end, the person's others go on)."""
    _send(user_group(pk), logged_out=logged_out)


LOGGED_OUT = Ending(kind="logged-out", title="You were logged out.", text="Log in again to go on.")


def ended(*, user_pk: int, session_hash: str, slug: str) -> Ending | None:
    """None while the person may still watch lab ``slug`` with the session they connected with
    (``session_hash``: its login's password hash); otherwise why not."""
    user = get_user_model().objects.filter(pk=user_pk).first()
    if user is None or not user.is_active:
        return Ending(
            kind="account",
            title="Your account is no longer active.",
            text="An instructor deactivated it; ask them if you think this is a mistake.",
        )
    if session_hash and not constant_time_compare(session_hash, user.get_session_auth_hash()):
        # As Django does for pages: a session from before a password change is over. (If the person
        # changed it in this browser, their session goes on under a new key: a reload finds it.)
        return Ending(
            kind="password",
            title="Your password was changed.",
            text="Reload the page, and log in again if asked.",
        )
    if access.visible_labs(user).filter(slug=slug).exists():
        return None
    lab = Lab.objects.filter(slug=slug).first()
    if lab is None:
        return Ending(
            kind="deleted", title="This lab was deleted.", text="Its page has nothing more to show."
        )
    return _demo_ending(user, lab) or Ending(
        kind="access",
        title="You no longer have access to this lab.",
        text="Your role changed: ask an instructor if you think this is a mistake.",
    )


def _demo_ending(user: Any, lab: Lab) -> Ending | None:
    from lab.classroom.models import Demo, DemoCopy

    demo = Demo.objects.filter(lab=lab).first()
    if demo is None:
        return None
    copy = DemoCopy.objects.filter(demo=demo, user=user).select_related("lab").first()
    copy_url = copy.lab.get_absolute_url() if copy is not None else ""
    if not demo.active and demo.viewers.filter(user=user).exists():
        return Ending(
            kind="demo-ended",
            title="The demo has ended.",
            text=f"{lab.owner.get_username()} ended it: this page no longer follows the lab.",
            copy_url=copy_url,
        )
    if demo.active:
        return Ending(kind="left", title="You left the demo.", text="Join it again with its code.")
    return None


def session_hash_of(session: Any) -> str:
    return str(session.get(HASH_SESSION_KEY, ""))


# ---------------------------------------------------------------------------- what can take access away


def _demo_changed(instance: Any, signal: Any, **_: Any) -> None:
    if signal is post_delete or not instance.active:
        # A lab deleted with its demo is rechecked by the lab's own signal.
        slug = Lab.objects.filter(pk=instance.lab_id).values_list("slug", flat=True).first()
        if slug is not None:
            recheck_lab(slug)


def _viewer_deleted(instance: Any, **_: Any) -> None:
    recheck_user(instance.user_id)


def _user_saved(instance: Any, update_fields: Any = None, **_: Any) -> None:
    if update_fields is not None and set(update_fields) == {"last_login"}:
        return  # a login, nothing taken away
    recheck_user(instance.pk)


def _user_deleted(instance: Any, **_: Any) -> None:
    recheck_user(instance.pk)


def _profile_changed(instance: Any, **_: Any) -> None:
    recheck_user(instance.user_id)


def _lab_deleted(instance: Any, **_: Any) -> None:
    recheck_lab(instance.slug)


def _logged_out(request: Any = None, user: Any = None, **_: Any) -> None:
    session = getattr(request, "session", None)
    if user is not None and session is not None and session.session_key:
        recheck_user(user.pk, logged_out=session.session_key)


def connect() -> None:
    """Hook the checks to the models' signals (LabConfig.ready)."""
    from lab.accounts.models import Profile
    from lab.classroom.models import Demo, DemoViewer

    User = get_user_model()
    post_save.connect(_demo_changed, sender=Demo, weak=False)
    post_delete.connect(_demo_changed, sender=Demo, weak=False)
    post_delete.connect(_viewer_deleted, sender=DemoViewer, weak=False)
    post_save.connect(_user_saved, sender=User, weak=False)
    post_delete.connect(_user_deleted, sender=User, weak=False)
    post_save.connect(_profile_changed, sender=Profile, weak=False)
    post_delete.connect(_profile_changed, sender=Profile, weak=False)
    post_delete.connect(_lab_deleted, sender=Lab, weak=False)
    user_logged_out.connect(_logged_out, weak=False)
