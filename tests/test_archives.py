"""The one door archives from outside come in by (``arena_core.archives``), attacked one
mechanism at a time: each hostile archive is refused in one line naming what, nothing lands
outside the folder, and a fleet cell that sends one back fails with that line (it used to crash
``settle`` on a ``.`` member)."""

from __future__ import annotations

import io
import tarfile
import time

import pytest

from arena_core import UsageError, unpack_folder
from arena_core.archives import MOST_MEMBERS

RUN = "20261201-000000-aaaa"


def _tar(*members: tarfile.TarInfo, data: dict[str, bytes] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for member in members:
            content = (data or {}).get(member.name)
            if content is not None:
                member.size = len(content)
            tar.addfile(member, io.BytesIO(content) if content is not None else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


FOLDER = _member(RUN, tarfile.DIRTYPE)
ATTACKS = {
    "a '.' member": ([FOLDER, _member(".", tarfile.DIRTYPE)], "a member named '.'"),
    "an empty name": ([FOLDER, _member("")], "a member named ''"),
    "a path out": ([FOLDER, _member(f"{RUN}/../../escaped")], "a path outside its folder"),
    "an absolute path": ([FOLDER, _member("/tmp/escaped")], "a path outside its folder"),
    "a symbolic link": ([FOLDER, _member(f"{RUN}/manifest.json", tarfile.SYMTYPE, "/etc/passwd")], "a link"),
    "a hard link": ([FOLDER, _member(f"{RUN}/manifest.json", tarfile.LNKTYPE, "/etc/passwd")], "a link"),
    "a device": ([FOLDER, _member(f"{RUN}/disk", tarfile.BLKTYPE)], "a device"),
    "a FIFO": ([FOLDER, _member(f"{RUN}/pipe", tarfile.FIFOTYPE)], "a FIFO"),
    "two folders": ([FOLDER, _member("20261201-000000-bbbb", tarfile.DIRTYPE)], "is not one folder"),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_each_hostile_member_is_refused_in_one_line(tmp_path, attack):
    members, said = ATTACKS[attack]
    into = tmp_path / "into"
    into.mkdir()
    with pytest.raises(UsageError) as refused:
        unpack_folder(_tar(*members), into, what="the bundle", most_bytes=2**20)
    message = str(refused.value)
    assert message.startswith("the bundle ") and said in message and "\n" not in message, message
    assert list(into.iterdir()) == [] and not (tmp_path / "escaped").exists()


def test_sizes_and_counts_are_bounded(tmp_path):
    into = tmp_path / "into"
    into.mkdir()
    big = _tar(FOLDER, _member(f"{RUN}/records.jsonl"), data={f"{RUN}/records.jsonl": b"x" * 5000})
    with pytest.raises(UsageError, match="unpacks to more than 4,000 bytes"):
        unpack_folder(big, into, what="the bundle", most_bytes=4000)  # packed it is small: gzip
    with pytest.raises(UsageError, match="is [0-9,]+ bytes: over the 10 byte limit"):
        unpack_folder(big, into, what="the bundle", most_bytes=10)
    flood = _tar(FOLDER, *(_member(f"{RUN}/{n}") for n in range(MOST_MEMBERS + 1)))
    with pytest.raises(UsageError, match=f"more than {MOST_MEMBERS:,} members"):
        unpack_folder(flood, into, what="the bundle", most_bytes=2**30)
    with pytest.raises(UsageError, match="cannot be unpacked"):
        unpack_folder(big[: len(big) // 2], into, what="the bundle", most_bytes=2**20)  # cut short
    assert list(into.iterdir()) == []
    # what passes lands whole, inside
    folder = unpack_folder(big, into, what="the bundle", most_bytes=2**20)
    assert folder == into / RUN and (folder / "records.jsonl").read_bytes() == b"x" * 5000


def test_a_cell_whose_archive_holds_a_dot_member_fails_its_cell(tmp_path):
    """It crashed ``settle`` (an IndexError on the member's name) instead of failing the cell."""
    from arena_fleet.execute import CellReport, settle
    from arena_fleet.matrix import BackendEntry, Cell

    cell = Cell(
        model="gemma-3-270m",
        precision="q4_k_m",
        backend=BackendEntry(name="llama-cpp", hardware=("cpu-host",)),
        hardware="cpu-host",
        workloads=("chat",),
        scale=0.02,
        repeat=0,
    )
    report = CellReport(exit_code=0, packed_run=_tar(FOLDER, _member(".", tarfile.DIRTYPE)), error="", node="box-2", seconds=1.0, started_at=time.time())
    outcome = settle(tmp_path / "store", cell, report, time.time())
    assert outcome.status == "failed" and "the run folder that came back holds a member named '.'" in outcome.reason, outcome
