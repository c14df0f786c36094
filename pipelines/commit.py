"""The chunk job's commit protocol: the output lock, the commit marker, and what a reader checks.

A run takes ``OUTPUT/_rechunk.lock`` exclusively before its pipeline starts (:func:`take_lock`);
every Parquet file it writes carries its run id in the footer's key-value metadata
(:data:`RUN_ID_KEY`). At the end it checks that it still holds the lock and that the data files
under ``OUTPUT`` are exactly the ones it wrote (:func:`verify_written`), then writes, each
atomically, ``report.json``, ``report.html`` and the commit marker ``OUTPUT/_SUCCESS``
(:func:`commit`), and removes the lock (:func:`release_lock`). A reader takes an output as
finished only when :func:`unfinished_reason` finds nothing.

The files are created and written as :mod:`pipelines.storage` does it: locally an exclusive
create and a rename within the folder; on ``gs://`` an upload with a does-not-exist precondition
and single uploads, which are atomic; on any other Beam filesystem the lock's create is not atomic.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from pipelines import storage
from pipelines.options import OptionError, RunError, one_line
from transforms.beam.write import RUN_ID_KEY

__all__ = [
    "DATA_FOLDERS",
    "LOCK_NAME",
    "MARKER_NAME",
    "REPORT_NAME",
    "RUN_ID_KEY",
    "LockInfo",
    "commit",
    "data_files",
    "new_run_id",
    "read_lock",
    "read_marker",
    "refuse_held_lock",
    "release_lock",
    "take_lock",
    "unfinished_reason",
    "verify_written",
]

LOCK_NAME = "_rechunk.lock"
MARKER_NAME = "_SUCCESS"
REPORT_NAME = "report.json"
#: The folders of a chunk job's output that hold data files.
DATA_FOLDERS = ("chunks", "dead_letter", "documents", "deleted")
#: A shard's name as Beam's file sink writes it: ``PREFIX-SSSSS-of-NNNNN.parquet``.
_SHARD = re.compile(r"^(?P<prefix>.+)-(?P<shard>\d{5})-of-(?P<shards>\d{5})\.parquet$")


def new_run_id() -> str:
    """A new run id: UTC start time and 12 random hex digits, ``20261202T070000Z-1a2b3c4d5e6f``."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:12]


# -- the lock --------------------------------------------------------------------------------------


def _process_start(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks since boot (``/proc``); ``None`` where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


@dataclass(frozen=True)
class LockInfo:
    """What ``OUTPUT/_rechunk.lock`` holds (JSON): the run's id, host name, launcher process id and
    its start in clock ticks since boot (``None`` where unknown), and the run's start (UTC, ISO 8601)."""

    run_id: str
    host: str
    pid: int
    started: str
    pid_start: int | None = None

    @classmethod
    def mine(cls, run_id: str) -> LockInfo:
        """This process's lock for ``run_id``."""
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return cls(run_id, socket.gethostname(), os.getpid(), started, _process_start(os.getpid()))

    def to_bytes(self) -> bytes:
        return (json.dumps(asdict(self), sort_keys=True) + "\n").encode("utf-8")

    @classmethod
    def from_bytes(cls, data: bytes) -> LockInfo:
        """The lock's fields; an unreadable lock is one of an unknown run (never stale)."""
        try:
            fields = json.loads(data)
            return cls(
                str(fields["run_id"]),
                str(fields["host"]),
                int(fields["pid"]),
                str(fields["started"]),
                None if fields.get("pid_start") is None else int(fields["pid_start"]),
            )
        except (ValueError, TypeError, KeyError):
            return cls("unknown", "unknown", 0, "unknown")

    def stale(self) -> bool:
        """Whether the run that holds it has ended: its launcher ran on this host and no such
        process runs now (or another process has its id since)."""
        if self.host != socket.gethostname() or self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # a process of another user: running
            return False
        return self.pid_start is not None and _process_start(self.pid) not in (None, self.pid_start)

    def describe(self) -> str:
        return f"run {self.run_id}, pid {self.pid} on {self.host}, started {self.started}"


def read_lock(output: str) -> LockInfo | None:
    """The lock of ``output`` (a folder, without its trailing ``/``), ``None`` when there is none.

    Raises:
        OSError: It cannot be read.
    """
    data = storage.read_bytes(f"{output}/{LOCK_NAME}")
    return None if data is None else LockInfo.from_bytes(data)


def _held_message(output: str, held: LockInfo) -> str:
    where = f"{output}/{LOCK_NAME}"
    return f"--output {output}: another run is writing there ({where}: {held.describe()}); if no run is, delete {where}"


def refuse_held_lock(output: str) -> LockInfo | None:
    """Refuse an ``output`` whose lock a running run holds; return a stale lock (its run ended
    without committing), or ``None`` when there is no lock.

    Raises:
        OptionError: A run that may still be running holds the lock, or it cannot be read.
    """
    try:
        held = read_lock(output)
    except OSError as err:
        raise OptionError(f"--output {output}: cannot read {output}/{LOCK_NAME} ({one_line(err)})") from None
    if held is not None and not held.stale():
        raise OptionError(_held_message(output, held))
    return held


def take_lock(output: str, folders: Sequence[str]) -> str:
    """Take ``output``'s lock for a new run and check that the run can write its ``folders`` there
    (each created) and ``report.json`` and ``_SUCCESS``; return the run id.

    A lock left by a run that ended (:meth:`LockInfo.stale`: same host, its process gone) is taken
    over; another run's takeover at the same moment is refused.

    Raises:
        OptionError: Another run holds the lock, or ``output`` cannot be written (one line each).
    """
    run_id = new_run_id()
    lock = f"{output}/{LOCK_NAME}"
    mine = LockInfo.mine(run_id)
    try:
        taken = storage.create_exclusive(lock, mine.to_bytes())
        if not taken:
            taken = _take_over(output, mine)
    except OSError as err:
        raise OptionError(f"--output {output}: cannot write there ({one_line(err)})") from None
    try:
        _check_writable(output, folders)
        _check_empty(output)
    except OptionError:
        release_lock(output, run_id)
        raise
    return run_id


def _take_over(output: str, mine: LockInfo) -> bool:
    """Replace a stale local lock by ``mine``, under ``_rechunk.lock.takeover`` (created exclusively).

    Raises:
        OptionError: The lock is not stale, or another run is taking it over.
        OSError: A file cannot be written.
    """
    lock = f"{output}/{LOCK_NAME}"
    held = read_lock(output)
    if held is None:  # released in the meantime: take it as a new one
        if storage.create_exclusive(lock, mine.to_bytes()):
            return True
        held = read_lock(output)
    if held is None or not held.stale() or not storage.is_local(output):
        raise OptionError(_held_message(output, held or LockInfo.from_bytes(b"")))
    guard = f"{lock}.takeover"
    if not storage.create_exclusive(guard, mine.to_bytes()):
        raise OptionError(
            f"--output {output}: another run is taking over the lock of an ended run; if none is, delete {guard}"
        )
    try:
        if read_lock(output) != held:
            raise OptionError(_held_message(output, read_lock(output) or held))
        os.unlink(lock)
        if not storage.create_exclusive(lock, mine.to_bytes()):
            raise OptionError(_held_message(output, read_lock(output) or held))
    finally:
        storage.remove(guard)
    return True


def _check_writable(output: str, folders: Sequence[str]) -> None:
    """Locally: each of ``folders`` exists as a folder (created) where a folder can be made, and
    ``report.json`` and ``_SUCCESS`` are not folders (a lock was already written in ``output``).

    Raises:
        OptionError: Naming the first path that is not so.
    """
    if not storage.is_local(output):
        return
    for name in (REPORT_NAME, MARKER_NAME):
        if os.path.isdir(f"{output}/{name}"):
            raise OptionError(f"--output {output}: {name} is a folder; the run writes a file there")
    for sub in folders:
        path = f"{output}/{sub}"
        try:
            os.makedirs(path, exist_ok=True)
            # The writers make a temporary folder in each (Beam's beam-temp-*): probe one.
            os.rmdir(_probe_folder(path))
        except FileExistsError:
            raise OptionError(f"--output {output}: {sub} is a file; the run writes a folder there") from None
        except OSError as err:
            raise OptionError(f"--output {output}: cannot write in {sub}/ ({one_line(err)})") from None


def _check_empty(output: str) -> None:
    """Under the lock: no run has committed into ``output`` nor written a file in its data folders
    (another run may have done so, and released its lock, since the checks before the lock).

    Raises:
        OptionError: Naming the marker or the first folder that holds a file.
    """
    try:
        if storage.read_bytes(f"{output}/{MARKER_NAME}") is not None:
            raise OptionError(f"--output {output}: holds a finished run ({MARKER_NAME}); choose an empty directory")
        for sub in DATA_FOLDERS:
            if storage.list_files(output, sub):
                raise OptionError(
                    f"--output {output}: {sub}/ already holds files from another run; choose an empty directory"
                )
    except OSError as err:
        raise OptionError(f"--output {output}: cannot read it ({one_line(err)})") from None


def _probe_folder(path: str) -> str:
    """Make an empty folder ``_rechunk-probe-PID`` in ``path``; return its path."""
    probe = os.path.join(path, f"_rechunk-probe-{os.getpid()}")
    os.mkdir(probe)
    return probe


def release_lock(output: str, run_id: str) -> None:
    """Remove ``output``'s lock if ``run_id`` holds it (another run's lock is left alone). Never raises."""
    try:
        held = read_lock(output)
    except OSError:
        return
    if held is not None and held.run_id == run_id:
        storage.remove(f"{output}/{LOCK_NAME}")


# -- what a run wrote ------------------------------------------------------------------------------


def data_files(output: str) -> dict[str, int]:
    """The data files under ``output``'s :data:`DATA_FOLDERS`, at any depth: relative path ->
    bytes, sorted by path. A name starting with ``_`` or ``.`` (at any level) is not data.

    Raises:
        OSError: A folder cannot be listed.
    """
    found: dict[str, int] = {}
    for sub in DATA_FOLDERS:
        for relative, size in storage.list_files(output, sub):
            if not any(part.startswith(("_", ".")) for part in relative.split("/")):
                found[relative] = size
    return dict(sorted(found.items()))


def _footer(path: str) -> tuple[int, str | None]:
    """Rows of Parquet file ``path`` and the run id in its footer (``None`` if it has none).

    Raises:
        Exception: It is not readable Parquet.
    """
    import pyarrow.parquet as pq
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.open(path) as f, pq.ParquetFile(f) as parquet:
        metadata = parquet.metadata
        run_id = (metadata.metadata or {}).get(RUN_ID_KEY)
        return metadata.num_rows, None if run_id is None else run_id.decode("utf-8", "replace")


def verify_written(output: str, run_id: str, prefixes: Sequence[str]) -> dict[str, dict[str, int]]:
    """Check that run ``run_id`` still holds ``output``'s lock and that the data files there are
    exactly the ones it wrote: each Parquet with ``run_id`` in its footer, each ``PREFIX-SSSSS-of-NNNNN``
    shard set whole, one set for each of ``prefixes`` (``chunks/chunks``, ...).

    Returns:
        Relative path -> ``{"bytes": n, "rows": n}``, sorted by path (the marker's ``files``).

    Raises:
        RunError: Any of that is not so (another writer, a lost lock); one line.
    """
    _check_lock_held(output, run_id)
    files: dict[str, dict[str, int]] = {}
    shard_sets: dict[tuple[str, int], set[int]] = {}
    try:
        found = data_files(output)
    except OSError as err:
        raise RunError(f"cannot list {output} ({one_line(err)}); nothing committed") from None
    for relative, size in found.items():
        path = f"{output}/{relative}"
        try:
            rows, writer = _footer(path)
        except Exception:  # not Parquet, or unreadable
            rows, writer = 0, None
        named = _SHARD.match(relative)
        if writer != run_id or named is None:
            raise RunError(_foreign(output, relative))
        shard_sets.setdefault((named["prefix"], int(named["shards"])), set()).add(int(named["shard"]))
        files[relative] = {"bytes": size, "rows": rows}
    for (prefix, shards), present in sorted(shard_sets.items()):
        missing = sorted(set(range(shards)) - present)
        if missing:
            raise RunError(
                f"{output}/{prefix}-{missing[0]:05d}-of-{shards:05d}.parquet is missing (another writer "
                f"used {output} at the same time); nothing committed"
            )
    written = {prefix for prefix, _ in shard_sets}
    for prefix in prefixes:
        if prefix not in written or sum(p == prefix for p, _ in shard_sets) > 1:
            raise RunError(f"{output}/{prefix}-*.parquet: not this run's one set of files; nothing committed")
    return files


def _check_lock_held(output: str, run_id: str) -> None:
    """Raises RunError unless run ``run_id`` holds ``output``'s lock."""
    try:
        held = read_lock(output)
    except OSError as err:
        raise RunError(f"cannot read {output}/{LOCK_NAME} ({one_line(err)}); nothing committed") from None
    if held is None or held.run_id != run_id:
        who = "it is gone" if held is None else f"it is {held.describe()}"
        raise RunError(f"{output}/{LOCK_NAME} is no longer this run's ({who}); nothing committed")


def _foreign(output: str, relative: str) -> str:
    return (
        f"{output}/{relative} was not written by this run (another writer used {output} at the same time); "
        "nothing committed"
    )


def _check_unchanged(output: str, run_id: str, files: Mapping[str, Mapping[str, int]]) -> None:
    """Raises RunError unless run ``run_id`` still holds the lock and the data files are ``files``
    (same names, same sizes)."""
    _check_lock_held(output, run_id)
    try:
        found = data_files(output)
    except OSError as err:
        raise RunError(f"cannot list {output} ({one_line(err)}); nothing committed") from None
    for name in sorted(set(found) | set(files)):
        if name not in found:
            raise RunError(f"{output}/{name} is gone (another writer used {output}); nothing committed")
        if name not in files or found[name] != files[name]["bytes"]:
            raise RunError(_foreign(output, name))


# -- the commit ------------------------------------------------------------------------------------


def commit(
    output: str,
    run_id: str,
    files: Mapping[str, Mapping[str, int]],
    report: Mapping[str, Any],
    *,
    write_html: Callable[[Mapping[str, Any], str], None] | None = None,
) -> None:
    """Commit run ``run_id``'s ``output``: once the lock and the data files are checked again
    (still ``files``, as :func:`verify_written` returned them), ``report.json``, then
    ``report.html`` (``write_html(report, path)``, when given), then ``_SUCCESS`` (JSON:
    ``run_id``, ``version``, ``files``, ``report_sha256``), each written atomically.

    Raises:
        RunError: The lock or the files changed, or a file cannot be written (a full disk): none of
            the three is left; one line.
    """
    import transforms

    _check_unchanged(output, run_id, files)
    data = (json.dumps(report, indent=2) + "\n").encode("utf-8")
    marker = {
        "run_id": run_id,
        "version": transforms.__version__,
        "files": {name: dict(figures) for name, figures in files.items()},
        "report_sha256": hashlib.sha256(data).hexdigest(),
    }
    step = REPORT_NAME
    try:
        storage.write_atomic(f"{output}/{REPORT_NAME}", data)
        if write_html is not None:
            step = "report.html"
            write_html(report, f"{output}/report.html")
        step = MARKER_NAME
        storage.write_atomic(f"{output}/{MARKER_NAME}", (json.dumps(marker, indent=2) + "\n").encode("utf-8"))
    except OSError as err:
        for name in (REPORT_NAME, "report.html", MARKER_NAME):
            storage.remove(f"{output}/{name}")
        why = os.strerror(err.errno) if err.errno else one_line(err)
        raise RunError(f"cannot write {output}/{step} ({why}); nothing committed") from None


def read_marker(output: str) -> dict[str, Any]:
    """The commit marker of ``output``: ``run_id``, ``version``, ``files`` (relative path ->
    ``{"bytes", "rows"}``) and ``report_sha256``.

    Raises:
        ValueError: There is none, or it is not a commit marker; the message says which.
    """
    try:
        data = storage.read_bytes(f"{output}/{MARKER_NAME}")
    except OSError as err:
        raise ValueError(f"cannot read {MARKER_NAME} ({one_line(err)})") from None
    if data is None:
        raise ValueError(f"no {MARKER_NAME} there")
    try:
        marker = json.loads(data)
        files = marker["files"]
        good = (
            isinstance(marker["run_id"], str)
            and isinstance(marker["report_sha256"], str)
            and isinstance(files, dict)
            and all(
                isinstance(f, dict) and all(type(f.get(k)) is int and f[k] >= 0 for k in ("bytes", "rows"))
                for f in files.values()
            )
        )
    except (ValueError, TypeError, KeyError):
        good = False
    if not good:
        raise ValueError(f"{MARKER_NAME} is not a rechunk commit marker")
    return marker


def unfinished_reason(output: str) -> str | None:
    """Why ``output`` is not a finished run, ``None`` when it is one: a valid ``_SUCCESS``, the
    ``report.json`` it names (sha256), and the data files it lists, no other, each of its size."""
    try:
        marker = read_marker(output)
    except ValueError as err:
        reason = str(err)
        try:
            held = read_lock(output)
        except OSError:
            held = None
        if held is not None:
            reason += f"; {LOCK_NAME} names {held.describe()} (still running, or ended without committing)"
        return reason
    try:
        report = storage.read_bytes(f"{output}/{REPORT_NAME}")
        found = data_files(output)
    except OSError as err:
        return f"cannot read it ({one_line(err)})"
    if report is None or hashlib.sha256(report).hexdigest() != marker["report_sha256"]:
        return f"{REPORT_NAME} is {'missing' if report is None else 'not the one'} {MARKER_NAME} names"
    listed = {name: figures["bytes"] for name, figures in marker["files"].items()}
    for name in sorted(set(listed) | set(found)):
        if name not in found:
            return f"{name} is missing ({MARKER_NAME} lists it)"
        if name not in listed:
            return f"{name} is not one of the files {MARKER_NAME} lists"
        if found[name] != listed[name]:
            return f"{name} has {found[name]} bytes, {MARKER_NAME} says {listed[name]}"
    return None
