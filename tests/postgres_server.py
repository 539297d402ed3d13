"""A throwaway PostgreSQL server for the test suite: Debian's ``postgresql`` as a child process.

``initdb`` makes a cluster in a fresh directory under the system's temporary directory; ``postgres``
serves it on a free loopback port (nothing else: ``listen_addresses`` is 127.0.0.1), with its unix
socket in that directory rather than /var/run/postgresql, and without fsync (a test database need
not survive a power cut). Its superuser ``lab`` has a random password, needed over TCP; the socket,
in a directory only the server's user may enter, trusts its user.

PostgreSQL refuses to run as root. As root (CI), every PostgreSQL program runs as the ``postgres``
user Debian's package makes (``nobody`` if there is none), which owns the directory: the child
drops its groups, group and user before it executes anything (``subprocess``'s ``user``/``group``),
so nothing of root's reaches it. As anyone else it runs as them. The directory is not under
pytest's ``tmp_path``, whose parents are private to the user running the tests.

Like the managed ZooKeeper (lab/zookeeper_server.py), the child never outlives us: it runs in its
own session, ``stop()`` asks for a fast shutdown and then kills its process group, ``atexit`` stops
it, and the kernel sends it SIGTERM if we die (``PR_SET_PDEATHSIG``, set after the user changed:
a change of user would clear it), which PostgreSQL takes as "shut down once the clients are gone";
they were ours, so they are.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.managed_server import death_signal_setter, free_port

INSTALL_HINT = "apt-get install -y postgresql (make system-postgresql does it)"
DEBIAN_ROOT = Path("/usr/lib/postgresql")  # /usr/lib/postgresql/<major>/bin/{initdb,postgres,...}
SUPERUSER = "lab"
DATABASE = "kafka_lab"


class PostgresNotInstalled(RuntimeError):
    """PostgreSQL's server programs are missing; the message says what to install."""


class PostgresStartError(RuntimeError):
    """The server did not come up; the message carries the tail of its log."""


def find_bin_dir(root: Path = DEBIAN_ROOT) -> Path:
    """The newest installed major version's ``bin`` holding ``initdb`` and ``postgres``."""
    found = []
    if root.is_dir():
        for child in root.iterdir():
            if (
                child.name.isdigit()
                and (child / "bin" / "initdb").is_file()
                and (child / "bin" / "postgres").is_file()
            ):
                found.append(child)
    if not found:
        raise PostgresNotInstalled(f"PostgreSQL is not installed (nothing under {root}): {INSTALL_HINT}")
    return max(found, key=lambda p: int(p.name)) / "bin"


@dataclass(frozen=True, slots=True, kw_only=True)
class Account:
    """Who the server runs as: ``None`` fields mean ourselves."""

    name: str
    uid: int | None
    gid: int | None


def server_account() -> Account:
    """``postgres`` (or ``nobody``) when we are root, since PostgreSQL will not run as root; else us."""
    if os.geteuid() != 0:
        return Account(name=pwd.getpwuid(os.geteuid()).pw_name, uid=None, gid=None)
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            return Account(name=name, uid=entry.pw_uid, gid=entry.pw_gid)
    raise PostgresStartError("running as root, and there is no postgres or nobody user to run PostgreSQL as")


class ManagedPostgres:
    """One PostgreSQL server, a child of this process, in its own temporary directory."""

    def __init__(self, *, bin_dir: Path | None = None) -> None:
        self.bin_dir = bin_dir or find_bin_dir()
        self.account = server_account()
        self.base_dir: Path | None = None
        self.port = 0
        self.password = secrets.token_urlsafe(18)
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``DATABASE_URL`` for the ``kafka_lab`` database, over loopback TCP."""
        return self.url_for(DATABASE)

    def url_for(self, database: str) -> str:
        if self._process is None:
            raise RuntimeError("PostgreSQL is not running: call start() first")
        return f"postgres://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{database}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def log_path(self) -> Path:
        assert self.base_dir is not None
        return self.base_dir / "postgres.log"

    # -- lifecycle -----------------------------------------------------------

    def start(self, timeout_s: float = 60.0) -> str:
        """initdb, start the server, make the ``kafka_lab`` database; return its ``DATABASE_URL``."""
        if self._process is not None:
            return self.url
        self.base_dir = Path(tempfile.mkdtemp(prefix="kafka-lab-postgres-"))
        try:
            self._give_to_account(self.base_dir)
            self._initdb()
            deadline = time.monotonic() + timeout_s
            for attempt in range(3):  # a free port can be taken between our probe and the server's bind
                self.port = free_port()
                self._launch()
                try:
                    self._wait_until_ready(deadline)
                    break
                except PostgresStartError:
                    lost_race = "could not bind" in self._log_tail() or "already in use" in self._log_tail()
                    self._terminate()
                    if lost_race and attempt < 2:
                        continue
                    raise
            self._run("createdb", "-h", str(self.base_dir), "-p", str(self.port), "-U", SUPERUSER, DATABASE)
        except BaseException:
            self.stop()
            raise
        atexit.register(self.stop)
        return self.url

    def stop(self, timeout_s: float = 20.0) -> None:
        """Stop the server and remove its directory; safe to call twice."""
        self._terminate(timeout_s)
        if self.base_dir is not None:
            shutil.rmtree(self.base_dir, ignore_errors=True)
            self.base_dir = None
        atexit.unregister(self.stop)

    # -- internals -----------------------------------------------------------

    def _as_account(self) -> dict[str, Any]:
        """``subprocess`` arguments that run a program as the server's account."""
        if self.account.uid is None:
            return {}
        return {"user": self.account.uid, "group": self.account.gid, "extra_groups": []}

    def _give_to_account(self, path: Path) -> None:
        path.chmod(0o700)
        if self.account.uid is not None and self.account.gid is not None:
            os.chown(path, self.account.uid, self.account.gid)

    def _run(self, program: str, *args: str) -> None:
        assert self.base_dir is not None
        done = subprocess.run(
            [str(self.bin_dir / program), *args],
            cwd=self.base_dir,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            **self._as_account(),
        )
        if done.returncode != 0:
            raise PostgresStartError(f"{program} failed ({done.returncode}):\n{done.stdout}{done.stderr}")

    def _initdb(self) -> None:
        assert self.base_dir is not None
        password_file = self.base_dir / "password"
        password_file.write_text(self.password + "\n")
        self._give_to_account(password_file)
        try:
            self._run(
                "initdb",
                "--pgdata",
                str(self.base_dir / "data"),
                "--username",
                SUPERUSER,
                f"--pwfile={password_file}",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            )
        finally:
            password_file.unlink(missing_ok=True)

    def _launch(self) -> None:
        assert self.base_dir is not None
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(self.port),
            "unix_socket_directories": str(self.base_dir),
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "shared_buffers": "16MB",
            "max_connections": "50",
        }
        options = [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [str(self.bin_dir / "postgres"), "-D", str(self.base_dir / "data"), *options],
                cwd=self.base_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # our Ctrl-C does not reach it; we stop it in order
                preexec_fn=death_signal_setter(),
                **self._as_account(),
            )

    def _wait_until_ready(self, deadline: float) -> None:
        assert self._process is not None
        assert self.base_dir is not None
        ready = [str(self.bin_dir / "pg_isready"), "-q", "-h", str(self.base_dir), "-p", str(self.port)]
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise PostgresStartError(
                    f"PostgreSQL exited with status {self._process.returncode} before serving.\n{self._log_tail()}"
                )
            if subprocess.run(ready, check=False, **self._as_account()).returncode == 0:
                return
            time.sleep(0.1)
        raise PostgresStartError(
            f"PostgreSQL did not answer on port {self.port} in time.\n{self._log_tail()}"
        )

    def _log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except (OSError, AssertionError):
            return "(no log)"
        return f"--- last lines of {self.log_path} ---\n" + "\n".join(text)

    def _terminate(self, timeout_s: float = 20.0) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        # SIGINT: PostgreSQL's fast shutdown (clients disconnected, a clean stop); then SIGKILL.
        for sig, wait_s in ((signal.SIGINT, timeout_s), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, sig)
            try:
                process.wait(wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
