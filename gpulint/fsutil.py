"""Atomic file writes: a reader (or a crash) sees the old file or the new one, never half."""

from __future__ import annotations

import os
import tempfile


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
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path: str, text: str, encoding: str = "utf-8") -> None:
    atomic_write_bytes(path, text.encode(encoding))
