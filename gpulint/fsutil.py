"""Files and folders: atomic writes (a reader, or a crash, sees the old file or the new one,
never half), writes of a report to whatever path the user named, and
what the nearest folder above a path holds (its git work tree, its config)."""

from __future__ import annotations

import os
import stat
import tempfile
from typing import Callable, Dict, Optional, TypeVar

T = TypeVar("T")


def _keep_owner(tmp: str, st: os.stat_result) -> None:
    """Give the new file the old one's owner and group (root fixing a user's
    files must not leave them owned by root). A file that would change owner is
    not written; a group that cannot be kept is let go, as an editor would."""
    if not hasattr(os, "chown"):
        return
    new = os.stat(tmp)
    if (new.st_uid, new.st_gid) == (st.st_uid, st.st_gid):
        return
    try:
        os.chown(tmp, st.st_uid, st.st_gid)
    except OSError as exc:
        if new.st_uid != st.st_uid:
            raise OSError(exc.errno, f"cannot keep the file's owner (uid {st.st_uid}): {exc.strerror or exc}") from exc


def atomic_write_bytes(path: str, data: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    st = None
    try:
        st = os.stat(path)
    except OSError:
        pass
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".gpulint-", suffix=".tmp")
    except OSError as exc:  # e.g. a read-only directory: say which directory
        raise OSError(exc.errno, f"cannot create a temporary file in {directory}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            _keep_owner(tmp, st)
            os.chmod(tmp, st.st_mode & 0o7777)  # after chown, which may clear set-id bits
        else:  # a new file gets the mode open() would give it, not mkstemp's 0600
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path: str, text: str, encoding: str = "utf-8") -> None:
    atomic_write_bytes(path, text.encode(encoding))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# paths whose entries stand for open files or devices (/dev/stdout, /dev/fd/1, /proc/self/fd/1)
_STREAM_DIRS = ("/dev/", "/proc/")


def write_output(path: str, data: bytes) -> None:
    """Write a report to the path the user named, as a shell redirect would,
    but atomically where that is possible:

    - a regular file (or a new one) is replaced atomically;
    - a symbolic link to a regular file has its target replaced atomically,
      and the link stays;
    - a device, a FIFO, a socket or a path under /dev or /proc
      (`/dev/stdout`) is opened and written through: it is never replaced.

    Raises OSError (with the reason) when the path cannot be written."""
    absolute = os.path.abspath(path)
    try:
        st = os.stat(absolute)  # follows links: what the data would land in
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "is a directory")
    if absolute.startswith(_STREAM_DIRS) or (st is not None and not stat.S_ISREG(st.st_mode)):
        _write_through(absolute, data)
        return
    # a link (or a chain of them) to a regular file, or to a file not there yet: replace the target
    atomic_write_bytes(os.path.realpath(absolute), data)


def _write_through(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOCTTY", 0), 0o666)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        try:
            os.fsync(fd)
        except OSError:
            pass  # a terminal or a pipe cannot be synced; the data has been written
    finally:
        os.close(fd)


def nearest_above(d: str, memo: Dict[str, Optional[T]], probe: Callable[[str], Optional[T]],
                  default: Optional[Callable[[], T]] = None) -> Optional[T]:
    """`probe` of the nearest folder at or above `d` where it answers (not
    None), else `default()` (or None). `memo` keeps the answer for every
    folder walked, so a run over many files walks each folder once."""
    cur = d
    seen = []
    found: Optional[T] = None
    while True:
        if cur in memo:
            found = memo[cur]
            break
        seen.append(cur)
        found = probe(cur)
        if found is not None:
            break
        parent = os.path.dirname(cur)
        if parent == cur:
            break
        cur = parent
    if found is None and default is not None:
        found = default()
    for s in seen:
        memo[s] = found
    return found


def git_root(d: str, memo: Optional[Dict[str, Optional[str]]] = None) -> Optional[str]:
    """The git work tree holding the folder `d` (the nearest folder at or
    above it with a `.git`), or None. `memo` keeps the answer for every folder
    walked, so a run over many files walks each folder once."""
    return nearest_above(d, {} if memo is None else memo,
                         lambda cur: cur if os.path.exists(os.path.join(cur, ".git")) else None)
