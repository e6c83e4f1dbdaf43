"""One door for archives from outside: a run folder a fleet box sends back is unpacked here,
and only here, after every member is checked (``tests/test_archives.py`` attacks each check).

An archive is a gzipped tar of one folder. Before tarfile reads it, its raw headers are walked
once: more bytes, packed or unpacked, than the caller allows, more than :data:`MOST_MEMBERS`
members, or one header of over :data:`MOST_HEADER_BYTES` (a long name or pax attributes, which
tarfile would read whole into memory) are refused there, without inflating what follows. Then,
in one line naming the member: a member named ``.`` or nothing, or named twice; a path outside
the folder (``..``, absolute); anything but a plain file or folder (a link, hard or symbolic, a
device, a FIFO); more than one folder at the top. What passes is extracted with tarfile's
``data`` filter as well, into a folder the caller owns.
"""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from arena_core.errors import UsageError

#: The most members an archive may hold (a run folder holds tens).
MOST_MEMBERS = 10_000
#: The most bytes one header may take (a long name, pax attributes): a real one is under a kilobyte.
MOST_HEADER_BYTES = 1 << 20
#: tar's block; a header is one, a member's data is padded to whole ones.
BLOCK = 512
GZIP_MAGIC = b"\x1f\x8b"


def is_packed(path: Path) -> bool:
    """Whether ``path`` is a file that starts as gzip does: an archive's (a bundle's), not a
    reference tool's JSON or a cards file, which are text."""
    try:
        if not path.is_file():  # a FIFO would block the open; a folder is no archive
            return False
        with open(path, "rb") as handle:
            return handle.read(2) == GZIP_MAGIC
    except OSError:
        return False


def unpack_folder(packed: bytes, into: Path, *, what: str, most_bytes: int) -> Path:
    """Unpack the gzipped tar ``packed`` (of one folder) into ``into``, an empty folder, and
    return the folder it held; ``what`` names the archive in the one-line refusal."""
    if len(packed) > most_bytes:
        raise UsageError(f"{what} is {len(packed):,} bytes: over the {most_bytes:,} byte limit, not unpacked")
    try:
        _walk_headers(packed, what, most_bytes)
        with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tar:
            members = tar.getmembers()  # as many as the walk counted
            top = _checked(members, what, most_bytes)
            tar.extractall(into, members=members, filter="data")
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:  # not an archive, or members that cannot be laid out (a file then a folder of one name)
        raise UsageError(f"{what} cannot be unpacked ({type(exc).__name__}: {str(exc)[:120]}); not unpacked") from None
    return into / top


def _walk_headers(packed: bytes, what: str, most_bytes: int) -> None:
    """Refuse an archive whose raw headers declare too much, reading each header and skipping
    its data: never more than ``most_bytes`` inflated, never one header held whole."""
    stream = gzip.GzipFile(fileobj=io.BytesIO(packed))
    total = headers = 0
    while len(header := stream.read(BLOCK)) == BLOCK and header != bytes(BLOCK):
        headers += 1
        if headers > 3 * MOST_MEMBERS:  # a member may carry a pax header and a long name's
            raise UsageError(f"{what} holds more than {MOST_MEMBERS:,} members: not unpacked")
        try:
            size = tarfile.nti(header[124:136])
        except tarfile.TarError:
            raise UsageError(f"{what} has a damaged header (member {headers}): not unpacked") from None
        if header[156:157] in (b"x", b"g", b"L", b"K") and size > MOST_HEADER_BYTES:
            raise UsageError(f"{what} holds a header of {size:,} bytes (a name or attributes over {MOST_HEADER_BYTES:,}): not unpacked")
        total += max(0, size)
        if total > most_bytes:
            raise UsageError(f"{what} unpacks to more than {most_bytes:,} bytes: not unpacked")
        skip = -(-size // BLOCK) * BLOCK
        while skip > 0 and (chunk := stream.read(min(skip, 1 << 20))):
            skip -= len(chunk)


def _checked(members: Sequence[tarfile.TarInfo], what: str, most_bytes: int) -> str:
    """The one top-level folder's name, once every member passes; else the first refusal."""
    if len(members) > MOST_MEMBERS:
        raise UsageError(f"{what} holds more than {MOST_MEMBERS:,} members: not unpacked")
    seen: set[str] = set()
    for member in members:
        path = PurePosixPath(member.name)
        shown = repr(member.name[:120])
        if not member.name.strip() or path.parts in ((), (".",)) or path.parts[0] == ".":
            raise UsageError(f"{what} holds a member named {shown}: not a file or folder inside it; not unpacked")
        if path.is_absolute() or ".." in path.parts:
            raise UsageError(f"{what} holds {shown}, a path outside its folder: not unpacked")
        if not (member.isfile() or member.isdir()):
            raise UsageError(f"{what} holds {shown}, {_kind(member)}: only plain files and folders are unpacked")
        if path.as_posix() in seen:
            raise UsageError(f"{what} holds {shown} twice: not unpacked")
        seen.add(path.as_posix())
    if sum(member.size for member in members) > most_bytes:
        raise UsageError(f"{what} unpacks to more than {most_bytes:,} bytes: not unpacked")
    tops = sorted({PurePosixPath(member.name).parts[0] for member in members})
    if len(tops) != 1:
        raise UsageError(f"{what} is not one folder (at its top: {', '.join(tops)[:200] or 'nothing'}); not unpacked")
    return tops[0]


def _kind(member: tarfile.TarInfo) -> str:
    if member.issym() or member.islnk():
        return "a link"
    if member.ischr() or member.isblk():
        return "a device"
    return "a FIFO" if member.isfifo() else "not a plain file"
