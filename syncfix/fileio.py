"""Reading and writing source files without ever losing a byte.

Reads keep the raw bytes (LibCST keeps the encoding, BOM and line endings); writes are atomic: a
temporary file in the same folder, flushed and fsynced, given the original's permissions, then
``os.replace``-d over the original, but only if the original has not changed since it was read.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass

TEMP_PREFIX = ".syncfix-"


def remove_stale_temporaries(folder: str) -> None:
    """Delete temporaries left by a syncfix process that was killed mid-write.

    A temporary is named ``.syncfix-<pid>-*.tmp``; only those of processes no longer alive are
    removed, so a concurrent run's file in flight is left alone.
    """
    try:
        names = [n for n in os.listdir(folder) if n.startswith(TEMP_PREFIX) and n.endswith(".tmp")]
    except OSError:
        return
    for name in names:
        pid_text = name[len(TEMP_PREFIX) :].split("-", 1)[0]
        if not pid_text.isdigit() or _alive(int(pid_text)):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, name))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class FileError(Exception):
    """A per-file problem with a one-line reason; the run goes on. ``at`` is the (line, column)
    it names, where there is one (a syntax error)."""

    def __init__(self, reason: str, at: tuple[int, int] | None = None) -> None:
        super().__init__(reason)
        self.at = at


@dataclass(frozen=True)
class Snapshot:
    data: bytes
    encoding: str
    mtime_ns: int
    size: int


def read_source(path: str) -> Snapshot:
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise FileError("not a regular file")
            data = fh.read()
    except FileError:
        raise
    except OSError as exc:
        raise FileError(exc.strerror or str(exc)) from exc
    if b"\0" in data:
        raise FileError("binary file (contains NUL bytes)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise FileError(f"bad encoding declaration: {exc.msg if hasattr(exc, 'msg') else exc}") from exc
    try:
        data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as exc:
        raise FileError(f"cannot decode as {encoding}: {exc.reason if hasattr(exc, 'reason') else exc}") from exc
    return Snapshot(data, encoding, st.st_mtime_ns, st.st_size)


def decode(data: bytes, encoding: str) -> str:
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def write_atomic(path: str, data: bytes, snapshot: Snapshot) -> None:
    """Replace ``path`` with ``data``; raise FileError (leaving the file as it was) on any problem."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError as exc:
        raise FileError(f"vanished before writing: {exc.strerror}") from exc
    if st.st_mtime_ns != snapshot.mtime_ns or st.st_size != snapshot.size:
        raise FileError("changed on disk while syncfix ran; not written")
    # Mode bits too: root may write anything, but a file marked read-only is meant to stay as is.
    if not st.st_mode & 0o222 or not os.access(real, os.W_OK):
        raise FileError("read-only file; not written")
    folder = os.path.dirname(real) or "."
    remove_stale_temporaries(folder)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise FileError(f"cannot write in {folder}: {exc.strerror}") from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        with contextlib.suppress(OSError):  # keep the owner where we may
            os.chown(tmp, st.st_uid, st.st_gid)
        os.replace(tmp, real)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise FileError(f"write failed: {exc.strerror or exc}") from exc
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
