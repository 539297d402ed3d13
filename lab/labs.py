"""The Django side of live labs: rows to runtime specs, starting labs, rendering frames, the demo.

``live_of(lab)`` is how views and consumers reach a lab's runtime: it starts the lab on
first use. ``boot()`` (called by ``make run``) makes sure the demo user and lab exist and
starts every lab, so they come back after a restart with their data.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import threading
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.template import Context
from django.template.loader import get_template
from django.utils.text import slugify

from lab import limits as lab_limits
from lab import ports
from lab.db_writer import write_later
from lab.engine import limits
from lab.engine.config import validate_broker_config
from lab.engine.errors import IllegalArgument, KafkaError, PolicyViolation, ZooKeeperNotAvailable
from lab.listening import LISTENERS_FRAGMENT, LISTENERS_VIEW
from lab.listening import view_of as listeners_view
from lab.models import Lab
from lab.runtime.live import Listen, LiveLab
from lab.runtime.manager import runtime
from lab.runtime.spec import (
    DEMO_BROKERS,
    DEMO_CLIENTS,
    DEMO_CONFIG,
    DEMO_TOPICS,
    SECURED,
    ClientSpec,
    LabSpec,
    TopicSpec,
)
from lab.visuals.frame import TopicIndex, plog_key, same_inputs
from lab.visuals.markup import PLAIN, partition_html
from lab.visuals.partition_log import TopicLog
from lab.zookeeper_server import INSTALL_HINT, zookeeper_status

log = logging.getLogger(__name__)

DEMO_USER = "demo"
DEMO_LAB = "demo"
DEMO_PASSWORD_FILE = "demo-password"
CHROOT_PREFIX = "/kafka-lab"
# True in a lab worker (lab.worker): with LAB_WORKERS set, only workers run labs; the web process
# reaches them through lab.remote.
RUNS_LABS_HERE = False


def on_workers() -> bool:
    """Whether this process reaches labs on lab workers (make run WORKERS=N) instead of running them."""
    return bool(settings.LAB_WORKERS) and not RUNS_LABS_HERE


# ---------------------------------------------------------------------------- ZooKeeper or memory


@dataclass(frozen=True, slots=True, kw_only=True)
class Store:
    zookeeper: str | None  # None: the memory store
    fallback_reason: str  # why there is no ZooKeeper, when there is none


def store_for_labs() -> Store:
    """ZooKeeper when it answers; otherwise the memory store, and the reason in words."""
    hosts: str = settings.LAB_ZOOKEEPER
    if not hosts:
        return Store(
            zookeeper=None,
            fallback_reason=(
                "No ZooKeeper is configured (LAB_ZOOKEEPER is unset), so labs keep their metadata in memory. "
                f"Install ZooKeeper ({INSTALL_HINT}) and start the lab with make run."
            ),
        )
    status = zookeeper_status(hosts)
    if not status.answered:
        return Store(
            zookeeper=None,
            fallback_reason=(
                f"ZooKeeper at {hosts} does not answer ({status.error}), so labs keep their metadata in memory. "
                f"Install ZooKeeper ({INSTALL_HINT}) and restart with make run."
            ),
        )
    return Store(zookeeper=hosts, fallback_reason="")


# ---------------------------------------------------------------------------- rows and specs


def labs_dir() -> Path:
    return Path(settings.LAB_DATA_DIR) / "labs"


def instance_id() -> str:
    """This installation's id (made once, kept in the data dir): two lab servers sharing one
    ZooKeeper must not share a chroot, or their brokers would claim each other's znodes."""
    path = Path(settings.LAB_DATA_DIR) / "instance-id"
    if path.is_file():
        text = path.read_text().strip()
        if text:
            return text
    path.parent.mkdir(parents=True, exist_ok=True)
    text = secrets.token_hex(4)
    path.write_text(text + "\n")
    return text


def spec_of(lab: Lab) -> LabSpec:
    return LabSpec.from_settings(
        slug=lab.slug,
        name=lab.name,
        data_dir=lab.data_dir,
        chroot=lab.zookeeper_chroot,
        brokers=lab.brokers,
        settings=lab.spec_settings(),
    )


def save_spec(lab: Lab, spec: LabSpec, version: int | None = None) -> bool:
    """Record what changed at runtime (rate, topics, clients) so the lab comes back with it; False if
    dropped. ``version`` (``LiveLab.versioned_spec``'s): saves of one lab race (a command's save after
    it, ``save_soon`` on the writer thread, another process's), so the row takes a spec only if it is
    newer than the one it holds, in one conditional UPDATE; an older one arriving after is dropped.
    None: a spec with no version (set by hand), saved as it is."""
    new = spec.settings()
    if version is None:
        if new != lab.settings:
            lab.settings = new
            lab.save(update_fields=["settings"])
        return True
    rows = Lab.objects.filter(pk=lab.pk, spec_version__lt=version)
    if not rows.update(settings=new, spec_version=version):
        return False  # a newer spec is there already (or the same one)
    lab.settings, lab.spec_version = new, version
    return True


def save_live_spec(lab: Lab, live: Any) -> bool:
    """Save a running lab's spec with its version (the two read together)."""
    spec, version = live.versioned_spec
    return save_spec(lab, spec, version)


def save_soon(live: Any) -> Future[None]:
    """Save a running lab's spec to its row on the writer thread (its driver never waits on the database):
    what changed it without a command that saves after it (an ACL or a SASL user a Kafka client made).
    The write takes the spec as it is when it runs, the newest."""

    def write() -> None:
        found = Lab.objects.filter(slug=live.slug).first()
        if found is not None:  # a lab deleted meanwhile keeps nothing
            save_live_spec(found, live)

    return write_later(write, f"saving lab {live.slug}'s spec")


async def asave_spec(lab: Lab, spec: LabSpec, version: int | None = None) -> bool:
    """``save_spec`` from async code."""
    new = spec.settings()
    if version is None:
        if new != lab.settings:
            lab.settings = new
            await lab.asave(update_fields=["settings"])
        return True
    rows = Lab.objects.filter(pk=lab.pk, spec_version__lt=version)
    if not await rows.aupdate(settings=new, spec_version=version):
        return False
    lab.settings, lab.spec_version = new, version
    return True


async def asave_live_spec(lab: Lab, live: Any) -> bool:
    spec, version = live.versioned_spec
    return await asave_spec(lab, spec, version)


def unique_slug(name: str) -> str:
    base = slugify(name)[:50] or "lab"
    slug, n = base, 2
    while Lab.objects.filter(slug=slug).exists():
        slug, n = f"{base}-{n}", n + 1
    return slug


def create_lab(
    owner: Any,
    name: str,
    *,
    brokers: int = 3,
    config: Mapping[str, object] | None = None,
    topics: Iterable[TopicSpec] = (),
    clients: Iterable[ClientSpec] = (),
    rate: float = 1.0,
    listeners: Iterable[str] = (),
) -> Lab:
    """A new lab row: the one way a lab is made, so every path meets the same checks.

    A bad name, broker count or config is refused (``IllegalArgument``, ``InvalidConfig``), and so is a
    lab beyond the owner's or the server's limit (``lab.limits``: ``TooManyLabs``, ``ServerFull``, both
    ``POLICY_VIOLATION``); then nothing is created. ``listeners``: Kafka's security protocols the lab
    listens with beside PLAINTEXT (SASL_PLAINTEXT, SSL, SASL_SSL), each on ports of its own. The counts, the slug and the row are one
    transaction, so two requests at once cannot both take the last place or the same slug.
    """
    name = name.strip()
    if not name:
        raise IllegalArgument("a lab needs a name")
    limits.LAB_NAME.check(name)  # the API's schema says the same
    clean = validate_broker_config(config or {})
    secured = check_listeners(listeners)
    chroot_base = f"{CHROOT_PREFIX}/{instance_id()}"
    with transaction.atomic():
        lab_limits.take_a_place(owner)
        slug = unique_slug(name)
        spec = LabSpec(
            slug=slug,
            name=name,
            data_dir=str(labs_dir() / slug),
            chroot=f"{chroot_base}/{slug}",
            brokers=brokers,
            config=clean,
            rate=rate,
            topics=tuple(topics),
            clients=tuple(clients),
        )
        lab = Lab.objects.create(
            name=name,
            slug=slug,
            owner=owner,
            brokers=brokers,
            settings=spec.settings(),
            data_dir=spec.data_dir,
            zookeeper_chroot=spec.chroot,
        )
        # Each broker's Kafka listener port, the lab's for its life (lab.ports); none left refuses the lab.
        spec = spec.with_ports(ports.allocate(lab, range(1, brokers + 1)))
        spec = spec.with_listeners(
            {p: ports.allocate(lab, range(1, brokers + 1), listener=p) for p in secured}
        )
        save_spec(lab, spec)
        return lab


def check_listeners(listeners: Iterable[str]) -> tuple[str, ...]:
    """The secured listeners asked for, in Kafka's order; IllegalArgument for any other name."""
    asked = [str(p).strip().upper() for p in listeners if str(p).strip()]
    unknown = [p for p in asked if p not in SECURED and p != "PLAINTEXT"]
    if unknown:
        raise IllegalArgument(
            f"a lab listens with PLAINTEXT and any of {', '.join(SECURED)}, not {', '.join(unknown)}"
        )
    return tuple(p for p in SECURED if p in asked)


def delete_lab_data(lab: Lab) -> None:
    """Stop the lab, then remove its logs and its ZooKeeper chroot (the caller deletes the row after).
    Not while ZooKeeper is out: its znodes must go with it (ZOOKEEPER_NOT_AVAILABLE, nothing deleted)."""
    running = runtime.get(lab.slug)
    if running is not None and running.zookeeper_outage:
        raise ZooKeeperNotAvailable(
            f"{running.zookeeper_outage}; the lab cannot be deleted until it answers (its znodes go with it)"
        )
    _forget(lab.slug, lab.data_dir, lab.zookeeper_chroot)


def _forget(slug: str, data_dir: str, chroot: str) -> None:
    """A lab gone: its runtime stopped, its logs and its chroot removed (each again is harmless)."""
    if on_workers():
        from lab import remote

        remote.forget(slug)  # its owner (a lab worker) stops it, and no worker takes it up again
    runtime.stop(slug)
    data = Path(data_dir).resolve()
    if data.is_relative_to(labs_dir().resolve()) and data.exists():
        shutil.rmtree(data, ignore_errors=True)
    hosts: str = settings.LAB_ZOOKEEPER
    if hosts and chroot and store_for_labs().zookeeper:
        from lab.engine.metadata.zookeeper import ZooKeeperStore

        store = ZooKeeperStore(hosts, chroot=chroot)
        try:
            store.delete_chroot()
        finally:
            store.close()


def lab_row_deleted(sender: Any, instance: Lab, **kwargs: Any) -> None:
    """However a lab's row goes (its owner's account deleted, the admin, ``delete_lab_data`` first), once
    the deletion is committed its runtime stops and its files go: a deleted lab must not run on, holding
    its ports and its place on the server."""
    slug, data_dir, chroot = instance.slug, instance.data_dir, instance.zookeeper_chroot

    def forget() -> None:
        try:
            _forget(slug, data_dir, chroot)
        except Exception:  # ZooKeeper out: the row is gone all the same, so say what is left behind
            log.warning(
                "lab %s deleted; its ZooKeeper chroot %s could not be removed: remove it by hand",
                slug,
                chroot,
                exc_info=True,
            )

    transaction.on_commit(forget)


# ---------------------------------------------------------------------------- the runtime


def live_of(lab: Lab) -> LiveLab:
    """The lab's runtime, started now if it is not running, its brokers listening for Kafka clients.
    With lab workers on (make run WORKERS=N), a ``lab.remote.RemoteLab``: the lab on its owner."""
    if on_workers():
        from lab import remote

        return remote.remote_lab(lab.slug)  # type: ignore[return-value]
    running = runtime.get(lab.slug)
    if running is not None and running.state != "stopped":
        running.wake("a page or an API call")  # whoever asks for the lab uses it: it wakes
        return running
    store = store_for_labs()
    spec = spec_of(lab)
    if any(b not in spec.ports for b in range(1, lab.brokers + 1)):
        # A lab made before labs had listeners: its ports now (lab.ports), kept from then on.
        try:
            spec = spec.with_ports(ports.ensure_ports(lab))
            save_spec(lab, spec)
        except ports.NoFreePorts as error:  # the lab runs all the same; its page says why it has no listeners
            log.warning("lab %s: %s", lab.slug, error.message)
    for protocol, have in spec.listeners.items():
        if any(b not in have for b in range(1, lab.brokers + 1)):  # the lab grew: the new brokers' ports
            try:
                spec = spec.with_listeners({**spec.listeners, protocol: ports.ensure_ports(lab, protocol)})
                save_spec(lab, spec)
            except ports.NoFreePorts as error:
                log.warning("lab %s: %s", lab.slug, error.message)
    live = runtime.start(
        spec,
        zookeeper=store.zookeeper,
        fallback_reason=store.fallback_reason,
        renderer=TemplateRenderer(lab.slug),
        listen=Listen(bind_host=settings.LAB_WIRE_BIND_HOST, advertised_host=settings.LAB_ADVERTISED_HOST),
        sleep_after_s=settings.LAB_SLEEP_AFTER_S or None,
        on_spec_change=save_soon,
    )
    live.add_view(LISTENERS_VIEW, listeners_view)
    return live


def zookeeper_outage(lab: Lab | None) -> str:
    """ "ZooKeeper is not answering ..." while the lab runs and cannot reach it; "" otherwise (starts nothing)."""
    running = runtime.get(lab.slug) if lab is not None else None
    return running.zookeeper_outage if running is not None else ""


def boot() -> list[LiveLab]:
    """Start every lab (the demo one included), and hook the classroom back into them:
    what ``make run`` does after migrating."""
    from lab.classroom.attach import reattach_all

    if not on_workers():
        started = [live_of(lab) for lab in Lab.objects.all()]
        reattach_all()
        return started
    # Each lab to a worker with room; beyond every worker's cap a lab waits (its page says why). The
    # classroom's hooks are named commands: they reach the labs on their workers as anywhere.
    placed = []
    for lab in Lab.objects.all():
        try:
            placed.append(live_of(lab))
        except (KafkaError, TimeoutError) as error:
            log.warning("lab %s was not started: %s", lab.slug, error)
    reattach_all([live.slug for live in placed])
    return placed


def stop_all() -> None:
    runtime.stop_all()


def page_parts(live: Any) -> dict[str, Any]:
    """What the lab's page is drawn from (any thread): every fragment of the last frame, the topics and
    whether simulated clients may be added. A worker draws them for the web process the same way."""
    if hasattr(live, "page"):
        return live.page()  # type: ignore[no-any-return]
    frame = live.frame
    renderer = live.renderer
    assert renderer is not None
    index = frame.views.get("plogs")
    return {
        "html": renderer.fragments(frame.views),
        "topics": list(index.topics) if isinstance(index, TopicIndex) else [],
        "simulated": bool(isinstance(index, TopicIndex) and index.simulated_clients),
    }


# ---------------------------------------------------------------------------- rendering


# Fragments that extensions add to frames (a view key, or its prefix before ":", to a template
# that draws it with ``v``, the view model): see LiveLab.add_view.
EXTRA_FRAGMENTS: dict[str, str] = {}


def register_fragment(key: str, template: str) -> None:
    EXTRA_FRAGMENTS[key] = template


register_fragment(LISTENERS_VIEW, LISTENERS_FRAGMENT)


def render_fragment(template: str, context: dict[str, Any]) -> str:
    """``template`` drawn with ``context``, numbers as Python writes them: the lab formats no number for
    a locale (no thousands separator: offsets are read as offsets), and skipping Django's localization
    of every number is a third of a frame's drawing (``tests/test_labs.py`` checks the result is the same)."""
    return get_template(template).template.render(Context(context, autoescape=True, use_l10n=False))  # type: ignore[no-any-return]


def warm_up() -> None:
    """Load the URL configuration and the lab page's template once, before labs draw: a class's labs
    drawing their first frames at once would each load them (Django's URL resolver is filled per
    thread while it is being filled), seconds of CPU right when every student opens their page."""
    from django.urls import reverse

    reverse("lab-act", args=["a-lab", "kill"])
    get_template(TemplateRenderer.template)


# A partition drawn alone is swapped by its id; inside its topic's section it is not (htmx would swap
# it out of the section).
_PARTITION_TAG = '<div class="partition-log" '
_PARTITION_SWAP = '<div class="partition-log" hx-swap-oob="true" '


class TemplateRenderer:
    """Fragments of ``lab/live.html`` as out-of-band HTML (one renderer per lab: URLs need its slug).

    Each fragment's last drawing is kept with what it was drawn from: a page that connects gets the
    lab's full state drawn only where it changed since the frames drew it (a class opening its labs at
    once costs the labs almost nothing)."""

    template = "lab/live.html"

    def __init__(self, slug: str) -> None:
        self.slug = slug
        self._lock = threading.Lock()
        self._drawn: dict[str, tuple[tuple[object, ...], str, int]] = {}  # inputs, html, frame seq
        # Each partition of a partition log, as last drawn (topic, partition -> inputs, html): a frame
        # redraws the partitions that changed, not the topic's every one (__consumer_offsets' five
        # while one group commits to one of them).
        self._partitions: dict[tuple[str, int], tuple[tuple[object, ...], str]] = {}
        self.partitions_drawn = 0

    def _inputs(self, key: str, views: Mapping[str, object]) -> tuple[object, ...] | None:
        """What fragment ``key`` is drawn from (None: the whole frame, never kept)."""
        if EXTRA_FRAGMENTS.get(key.split(":", 1)[0]) is not None:
            return None
        if key == "plogs":
            index = views.get("plogs")
            names = [*getattr(index, "topics", ()), *getattr(index, "internal", ())]
            return (index, *(views.get(plog_key(n)) for n in names))
        if key.startswith("plog:"):
            return (views.get(key), views.get("plogs"))
        if key == "clients":
            return (views.get(key), views.get("client-stats"))
        if key == "cluster-map":
            return (views.get(key), views.get("sessions"))
        return (views.get(key),)

    def context(self, key: str, views: Mapping[str, object]) -> dict[str, Any]:
        ctx: dict[str, Any] = {"slug": self.slug, "v": views.get(key), "views": views}
        if key == "plogs":
            index = views.get("plogs")
            names = [*getattr(index, "topics", ()), *getattr(index, "internal", ())]
            ctx["blocks"] = [views[plog_key(n)] for n in names if plog_key(n) in views]
        if key.startswith("plog:") or key == "plogs":
            index = views.get("plogs")
            ctx["tip"] = index.tip if index is not None else {}  # type: ignore[attr-defined]
            ctx["draw_partition"] = self.partition
        if key == "clients":
            ctx["stats"] = views.get("client-stats")
        if key == "cluster-map":
            ctx["sessions"] = views.get("sessions")
        return ctx

    def fragment(self, key: str, views: Mapping[str, object]) -> str:
        inputs = self._inputs(key, views)
        if inputs is not None:
            with self._lock:
                last = self._drawn.get(key)
            if last is not None and same_inputs(last[0], inputs):
                return last[1]
        html = self.draw(key, views)
        if inputs is not None:
            # A page connecting draws the latest frame on its own thread while the lab's draws the next:
            # the older drawing must not replace the newer one, or the next page draws it again.
            seq = getattr(views.get("frame"), "seq", 0)
            with self._lock:
                last = self._drawn.get(key)
                if last is None or last[2] <= seq:
                    self._drawn[key] = (inputs, html, seq)
        return html

    def is_drawn(self, key: str, views: Mapping[str, object]) -> bool:
        """Whether fragment ``key``'s last drawing is from ``views`` (a frame is drawn after it is
        published: its "frame" fragment last)."""
        inputs = self._inputs(key, views)
        with self._lock:
            last = self._drawn.get(key)
        return inputs is not None and last is not None and same_inputs(last[0], inputs)

    def partition(self, topic: Any, partition: Any, tip: Mapping[str, str]) -> str:
        """One partition of ``topic``'s log (``lab.visuals.markup``), drawn again only when what it is
        drawn from changed."""
        where = (str(topic.topic), int(partition.partition))
        inputs = (topic.topic, topic.tips, dict(tip), partition)
        with self._lock:
            last = self._partitions.get(where)
        if last is not None and last[0] == inputs:
            return last[1]
        html = partition_html(topic, partition, tip)
        with self._lock:
            self._partitions[where] = (inputs, html)
            self.partitions_drawn += 1
        return html

    def changes(self, key: str, views: Mapping[str, object], previous: Mapping[str, object]) -> str:
        """What a page showing ``previous`` needs to show fragment ``key`` of ``views``: the fragment, or
        for a topic's partition log whose partitions are the same ones, only those that changed, each
        swapped by its own id (a busy topic's three partitions, not the section of all with
        __consumer_offsets' five for the one a group committed to)."""
        now, before = views.get(key), previous.get(key)
        index, index_before = views.get("plogs"), previous.get("plogs")
        if not (
            key.startswith("plog:")
            and isinstance(now, TopicLog)
            and isinstance(before, TopicLog)
            and (now.topic, now.internal, now.tips) == (before.topic, before.internal, before.tips)
            and [p.partition for p in now.partitions] == [p.partition for p in before.partitions]
            and isinstance(index, TopicIndex)
            and isinstance(index_before, TopicIndex)
            and index.tips == index_before.tips
        ):
            return self.fragment(key, views)
        tip = index.tip
        return "".join(
            self.partition(now, p, tip).replace(_PARTITION_TAG, _PARTITION_SWAP, 1)
            for p, was in zip(now.partitions, before.partitions, strict=True)
            if p != was
        )

    def draw(self, key: str, views: Mapping[str, object]) -> str:
        """Fragment ``key`` drawn afresh."""
        extra = EXTRA_FRAGMENTS.get(key.split(":", 1)[0])
        if extra is not None:
            return render_fragment(extra, {"v": views.get(key), "key": key, "views": views})
        plain = PLAIN.get(key)
        if plain is not None:  # drawn in every frame: plain strings (lab.visuals.markup)
            return plain(views.get(key))
        name = "plog" if key.startswith("plog:") else key
        ctx = self.context(key, views)
        if name == "plog":
            ctx["t"] = ctx["v"]
            ctx["tip"] = ctx.get("tip", {})
        return render_fragment(f"{self.template}#{name}", ctx)

    def fragments(self, views: Mapping[str, object]) -> dict[str, str]:
        """Every fragment, keyed for templates (``cluster-map`` -> ``cluster_map``)."""
        return {
            key.replace("-", "_"): self.fragment(key, views) for key in views if not key.startswith("plog:")
        }


# ---------------------------------------------------------------------------- the demo


def _password_file() -> Path:
    return Path(settings.LAB_DATA_DIR) / DEMO_PASSWORD_FILE


def ensure_demo_user() -> tuple[Any, str]:
    """The demo user and its password: generated on first run, saved under the data dir (mode 600).

    The password is never in the code: it is made here, stored in ``<LAB_DATA_DIR>/demo-password``
    and printed by ``make run``. A lost file gets a new password.
    """
    from lab.accounts.models import Role, set_role

    User = get_user_model()
    path = _password_file()
    user = User.objects.filter(username=DEMO_USER).first()
    password = path.read_text().strip() if path.is_file() else ""
    if user is not None and password and user.check_password(password):
        set_role(user, Role.INSTRUCTOR)
        return user, password
    password = secrets.token_urlsafe(12)
    if user is None:
        user = User.objects.create_user(DEMO_USER, password=password)
    else:
        user.set_password(password)
        user.save(update_fields=["password"])
    # The person who runs `make run` is the lab's first instructor.
    set_role(user, Role.INSTRUCTOR)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(password + "\n")
    return user, password


def ensure_demo_lab(owner: Any) -> Lab | None:
    """The demo lab: 3 brokers, topic orders (3 partitions, RF 3), a producer and a consumer group.

    None (and the reason logged) when a limit refuses it: the lab serves on without it.
    """
    lab = Lab.objects.filter(slug=DEMO_LAB).first()
    if lab is not None:
        return lab
    try:
        return _make_demo_lab(owner)
    except PolicyViolation as refused:
        log.warning("The demo lab was not made: %s", refused.message)
        return None


def _make_demo_lab(owner: Any) -> Lab:
    return create_lab(
        owner,
        "Demo",
        brokers=DEMO_BROKERS,
        config=DEMO_CONFIG,
        topics=DEMO_TOPICS,
        clients=DEMO_CLIENTS,
    )
