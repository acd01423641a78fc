"""Atomic replacement of a file that keeps its permissions, links and owner.

Note [Atomic saves]
``tg.save(obj, path)`` writes the complete new content to a temporary file in the
target's directory, flushes it to disk, and renames it over the target, so the
target holds either its old content or the new one, never a mix.

* **Symlinks** are followed: the file a link points to is replaced and the link
  stays a link (a link to a missing file creates that file).
* **Permissions** of an existing file (and its owner and group, where the process
  may set them) carry over to the new content; a new file gets ``0o666`` less the
  umask, as ``open(path, "w")`` would.
* **Hard links**: renaming would split a file that has several names, so such a file
  is rewritten in place (every name sees the new content). That rewrite is not
  atomic: a crash in the middle leaves a file that ``tg.load`` rejects with
  ``FormatError`` (the checksums), never one it misreads. Paths that are not
  regular files (``/dev/null``, a FIFO) are also written in place.
* **Temporary files** are named ``.NAME.tg-HOST-PID-RANDOM.tmp`` (HOST: 8 hex digits
  of the host name, PID: the writer's process id). A writer killed mid-save (SIGKILL,
  power loss) cannot remove its own; the next save to the same path removes every
  such file of the same host whose process is no longer running. Files of a live
  process or of another host (a shared network drive) are left alone.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import stat
import zlib

__all__ = ["atomic_write", "temp_name", "remove_stale_temps"]

_HOST = f"{zlib.crc32(socket.gethostname().encode()) & 0xFFFFFFFF:08x}"


def temp_name(target: str) -> str:
    """A fresh temporary path next to ``target`` (Note [Atomic saves])."""
    directory, base = os.path.split(target)
    return os.path.join(directory, f".{base}.tg-{_HOST}-{os.getpid()}-{secrets.token_hex(6)}.tmp")


def remove_stale_temps(target: str) -> list[str]:
    """Remove temporaries of ``target`` left by dead writers of this host; return their paths."""
    if os.name != "posix":  # os.kill(pid, 0) terminates the process on Windows
        return []
    directory, base = os.path.split(target)
    pattern = re.compile(rf"\.{re.escape(base)}\.tg-([0-9a-f]{{8}})-(\d+)-[0-9a-f]+\.tmp")
    removed = []
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return removed
    for name in names:
        match = pattern.fullmatch(name)
        if match is None or match[1] != _HOST or _alive(int(match[2])):
            continue
        path = os.path.join(directory, name)
        try:
            os.unlink(path)
        except OSError:
            continue
        removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # someone else's live process (or a pid we cannot judge): keep its file
    return True


def atomic_write(path: str, write) -> None:
    """Call ``write(binary_file)`` to produce the new content of ``path`` and install it.

    See Note [Atomic saves] for what is kept and how temporaries are named.
    """
    target = os.path.realpath(path)  # write through symlinks to the file they name
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    if st is not None and (not stat.S_ISREG(st.st_mode) or st.st_nlink > 1):
        _write_in_place(target, write)
        return
    remove_stale_temps(target)
    tmp = temp_name(target)
    # With mode 0o666 the umask decides a new file's permissions, as for open(); an
    # existing file's mode is copied below, and until then only the owner may read.
    mode = 0o666 if st is None else 0o600
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), mode)
    try:
        if st is not None:
            _copy_metadata(fd, tmp, st)
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_directory(os.path.dirname(target))


def _copy_metadata(fd: int, tmp: str, st: os.stat_result) -> None:
    if hasattr(os, "fchown"):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)  # before chmod: chown may clear setuid bits
        except OSError:
            pass  # not ours to give away: the new file keeps our uid/gid
    if hasattr(os, "fchmod"):
        os.fchmod(fd, stat.S_IMODE(st.st_mode))
    else:
        os.chmod(tmp, stat.S_IMODE(st.st_mode))


def _write_in_place(target: str, write) -> None:
    with open(target, "r+b" if _seekable_file(target) else "wb") as out:
        if out.seekable():
            out.seek(0)
            out.truncate()
        write(out)
        out.flush()
        try:
            os.fsync(out.fileno())
        except OSError:
            pass  # character devices and pipes cannot be synced


def _seekable_file(target: str) -> bool:
    return stat.S_ISREG(os.stat(target).st_mode)


def _fsync_directory(directory: str) -> None:
    """Make the rename itself durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
