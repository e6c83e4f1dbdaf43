"""``arena matrix`` and ``arena fleet`` (shared/spec/fleet.md): the matrix file, the plan and its
natural keys, ingest as an attacker would feed it, and a real matrix on a local Ray cluster of
separate node processes, each advertising a different hardware and serving a different backend."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from arena_core import ArenaHooks, make_plugin_manager
from arena_core.errors import UsageError
from arena_core.testing import arena_argv

TOKENIZER = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"
LOOPBACK = "127.0.0.1"


@pytest.fixture(scope="module")
def registry():
    return ArenaHooks(make_plugin_manager(autoload=False, strict=True)).registry


def arena(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(arena_argv(*args), capture_output=True, text=True, timeout=timeout, env=env)


def write_matrix(path: Path, backends: str, *, sets: str = '[["chat"]]', extra: str = "scale = 0.02") -> Path:
    path.write_text(f'models = ["gemma-3-270m"]\nworkload_sets = {sets}\n{extra}\n{backends}', encoding="utf-8")
    return path


LLAMA = '[[backends]]\nname = "llama-cpp"\nhardware = ["cpu-host"]\n'


def rig_backend(url: str, hardware: str = "gb10") -> str:
    return f'[[backends]]\nname = "openai"\nhardware = ["{hardware}"]\nbase_url = "{url}"\ntokenizer = "{TOKENIZER}"\n'


@pytest.mark.slow
def test_a_matrix_file_is_checked_and_wrong_keys_are_named(tmp_path):
    cases = {"bogus = 1": "extra fields found (bogus)", "scale = 500": "scale must be above 0 and at most 100", "repeats = 0": "repeats must be 1 to 100"}
    for extra, said in cases.items():
        done = arena("matrix", "plan", str(write_matrix(tmp_path / "m.toml", LLAMA, extra=extra)), "--output", str(tmp_path / "store"))
        assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
    wrong = write_matrix(tmp_path / "m.toml", LLAMA.replace("cpu-host", "cpu-hst"))
    done = arena("matrix", "plan", str(wrong))
    assert done.returncode == 2 and "$.backends[0].hardware: unknown hardware profile 'cpu-hst'" in done.stderr
    (tmp_path / "bad.toml").write_text("models = [", encoding="utf-8")
    done = arena("matrix", "run", str(tmp_path / "bad.toml"))
    assert done.returncode == 2 and "bad.toml: not TOML" in done.stderr


def test_natural_keys_change_only_for_the_cells_a_setting_touches(tmp_path, registry):
    from arena_fleet.matrix import cells_of, load_matrix

    two = LLAMA + rig_backend("http://127.0.0.1:9")
    before = {c.label(): c.natural_key() for c in cells_of(load_matrix(write_matrix(tmp_path / "a.toml", two), registry), registry)}
    bumped = LLAMA + rig_backend("http://127.0.0.1:9") + 'version = "rig 2"\n'
    after = {c.label(): c.natural_key() for c in cells_of(load_matrix(write_matrix(tmp_path / "b.toml", bumped), registry), registry)}
    assert len(before) == 2
    changed = {label for label in before if before[label] != after[label]}
    assert changed == {"gemma-3-270m · openai · gb10 · chat"}  # the llama.cpp cell keeps its key: it would not run again


def test_two_entries_of_one_backend_on_one_box_get_two_labels(tmp_path, registry):
    """Two servers of one backend on one kind of box (two vLLM versions, two addresses) were the
    same "gemma-3-270m · openai · gb10 · chat" in the plan, the progress and the summary."""
    from arena_core.testing import run_cli
    from arena_fleet.matrix import cells_of, load_matrix

    two = rig_backend("http://127.0.0.1:9") + rig_backend("http://127.0.0.1:10") + 'version = "rig 2"\n'
    cells = cells_of(load_matrix(write_matrix(tmp_path / "m.toml", LLAMA + two), registry), registry)
    labels = [cell.label() for cell in cells]
    assert len(set(labels)) == 3 and labels[0] == "gemma-3-270m · llama-cpp · cpu-host · chat"
    assert labels[1] == "gemma-3-270m · openai · gb10 · chat (version unset, base_url http://127.0.0.1:9)"
    assert labels[2] == "gemma-3-270m · openai · gb10 · chat (version rig 2, base_url http://127.0.0.1:10)"
    planned = run_cli(make_plugin_manager(autoload=False), ["matrix", "plan", str(tmp_path / "m.toml"), "--output", str(tmp_path / "store")])
    assert planned.exit_code == 0 and all(label in planned.stdout for label in labels[1:]), planned.stdout


def _packed(entries: list[tuple[str, bytes | None, str]]) -> bytes:
    """A gzipped tar of (name, content, kind) with kind "file", "dir" or "symlink" (content: the target)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, content, kind in entries:
            info = tarfile.TarInfo(name)
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, (content or b"").decode()
                tar.addfile(info)
            else:
                info.size = len(content or b"")
                tar.addfile(info, io.BytesIO(content or b""))
    return buffer.getvalue()


def test_ingest_refuses_what_a_hostile_box_could_send(tmp_path):
    """A box is not trusted with the driver's disk: no links, no paths out of the run's folder,
    one run per answer, and a second copy of a run already there is kept once."""
    from arena_fleet.execute import ingest

    store = tmp_path / "store"
    attacks = {
        "links": [("20261201-000000-aaaa", None, "dir"), ("20261201-000000-aaaa/manifest.json", b"/etc/passwd", "symlink")],
        "outside": [("20261201-000000-aaaa", None, "dir"), ("20261201-000000-aaaa/../../escaped", b"x", "file")],
        "two runs": [("20261201-000000-aaaa/manifest.json", b"{}", "file"), ("20261201-000000-bbbb/manifest.json", b"{}", "file")],
        "not a run id": [("../etc/manifest.json", b"{}", "file")],
    }
    for name, entries in attacks.items():
        with pytest.raises(UsageError):
            ingest(store, _packed(entries))
        assert not (tmp_path / "escaped").exists(), name
    assert sorted(p.name for p in store.iterdir()) == []  # nothing landed, not even a temporary folder


@pytest.mark.slow
def test_ray_is_an_optional_extra(tmp_path):
    """Without Ray installed, --ray says how to install it (one line, exit 2); without --ray the
    matrix needs no Ray at all."""
    matrix = write_matrix(tmp_path / "m.toml", LLAMA)
    hide = "import sys; sys.modules['ray'] = None; from arena_core.cli import main; sys.exit(main())"
    argv = [sys.executable, "-c", hide, "matrix", "run", str(matrix), "--output", str(tmp_path / "store"), "--ray", "auto"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "pip install 'arena-bench[fleet]'" in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("chosen", [None, "10"])
def test_a_cell_on_a_ray_worker_runs_at_normal_priority(monkeypatch, chosen):
    """Ray nices its workers by default; a cell undoes that where it may (root), so the server it
    starts is not measured behind the box's other processes. A niceness the box's owner chose
    when starting Ray (RAY_worker_niceness) is kept."""
    from arena_fleet.on_ray import RAY_NICENESS, at_normal_priority

    monkeypatch.delenv(RAY_NICENESS, raising=False)
    if chosen is not None:
        monkeypatch.setenv(RAY_NICENESS, chosen)
    read, write = os.pipe()
    if (pid := os.fork()) == 0:  # a child of this process, niced as Ray nices a worker (syscalls only)
        try:
            os.nice(10)
            at_normal_priority()
            os.write(write, str(os.getpriority(os.PRIO_PROCESS, 0)).encode())
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    os.close(write)
    assert int(os.read(read, 16)) == (0 if os.geteuid() == 0 and chosen is None else 10)
    os.close(read)


@pytest.mark.slow
def test_fleet_join_prints_the_ray_start_line_for_this_box():
    done = arena("fleet", "join", "--address", "10.0.0.5:6379")
    assert done.returncode == 0
    line = done.stdout.splitlines()[-1]
    assert line == "RAY_worker_niceness=0 ray start --address=10.0.0.5:6379 --resources='{\"hw:cpu-host\": 1}'"  # the detected profile on this machine
    chosen = arena("fleet", "join", "--hardware", "gb10")
    assert "--resources='{\"hw:gb10\": 1}'" in chosen.stdout
    assert arena("fleet", "join", "--hardware", "nope").returncode == 2


def _cells(output: str) -> dict[str, str]:
    """The summary table's status per cell."""
    found = {}
    for line in output.splitlines():
        if " · " in line and not line.startswith("["):
            label, rest = line.split("  ", 1)
            found[label.strip()] = rest.split()[0]
    return found


@pytest.mark.slow
def test_a_matrix_on_a_local_ray_cluster(tmp_path, monkeypatch):
    """Two Ray nodes on loopback, separate processes: one advertises cpu-host and serves the
    embedded llama.cpp, the other advertises gb10 and serves the measuring rig. Six cells land
    once each and verify; one cell per box at a time; killing the rig's node mid-matrix loses no
    finished cell and a second run finishes the rest; a cell for hardware nobody advertises fails
    after its (shortened) wait, naming the resource; the same matrix again runs nothing."""
    pytest.importorskip("ray", reason="CI installs Ray with the test extra")
    from ray.cluster_utils import Cluster

    from arena_core.run.integrity import verify
    from arena_core.run.manifest import read_manifest
    from arena_core.testing.fake_server import FakeServerProcess

    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    # the cells niced on purpose, as a box's owner may choose (kept: at_normal_priority): this test
    # checks the matrix's bookkeeping, and its servers must not take the CPU from the timing-held
    # tests beside it (at normal priority, two capacity searches on the rig failed their SLO)
    monkeypatch.setenv("RAY_worker_niceness", "15")
    loopback = {"node_ip_address": LOOPBACK, "include_dashboard": False}
    cluster = Cluster(initialize_head=True, connect=False, head_node_args={"num_cpus": 1, "resources": {"hw:cpu-host": 1}, **loopback})
    try:
        rig_node = cluster.add_node(num_cpus=1, resources={"hw:gb10": 1}, **loopback)
        store = tmp_path / "store"
        with FakeServerProcess(["--tokenizer", str(TOKENIZER / "tokenizer.json"), "--decode-gap-ms", "40"]) as rig:
            # the smallest scale, and three sets the embedded server answers in seconds (the test
            # is of the matrix's bookkeeping): a closed-loop chat, prompts to prefill, an open loop
            sets = '[["chat"], ["rag-8k"], ["office-baseline"]]'
            matrix = write_matrix(tmp_path / "matrix.toml", LLAMA + rig_backend(rig.url), sets=sets, extra="scale = 0.01\nwait_for_hardware_s = 8")
            driver = ["matrix", "run", str(matrix), "--output", str(store), "--ray", cluster.address, "--node-ip-address", LOOPBACK]
            first = subprocess.Popen(arena_argv(*driver), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            assert first.stdout is not None
            seen = []
            for line in first.stdout:
                seen.append(line)
                if "· gb10 ·" in line and ": done on node" in line:
                    cluster.remove_node(rig_node)  # the rig's box dies while its next cell runs
                    break
            rest, errors = first.communicate(timeout=600)
            output = "".join(seen) + rest
            assert first.returncode == 4, output + errors  # some cells failed
            assert "the last box with hw:gb10 left the cluster" in output or "no box in the cluster advertises hw:gb10" in output, output
            ledger = json.loads((store / "matrix-cells.json").read_text())
            survived = {entry["run_id"] for entry in ledger.values()}
            assert any("gb10" in entry["cell"] for entry in ledger.values())  # the rig's finished cell was kept
            assert all(verify(store / run_id)[1] == [] for run_id in survived)

            cluster.add_node(num_cpus=1, resources={"hw:gb10": 1}, **loopback)  # a new box of that kind joins
            second = arena(*driver)
            assert second.returncode == 0, second.stdout + second.stderr
            statuses = _cells(second.stdout)
            assert len(statuses) == 6 and set(statuses.values()) == {"done", "skipped"}
            assert {label for label, status in statuses.items() if status == "skipped"} == {e["cell"] for e in ledger.values()}

            again = arena(*driver)
            assert again.returncode == 0 and "0 of 6 cells to run (6 already measured and verified)" in again.stdout

            nobody = write_matrix(tmp_path / "nobody.toml", rig_backend(rig.url, hardware="h100-sxm"), extra="scale = 0.02\nwait_for_hardware_s = 3")
            missing = arena("matrix", "run", str(nobody), "--output", str(store), "--ray", cluster.address, "--node-ip-address", LOOPBACK)
            assert missing.returncode == 4 and "no box in the cluster advertises hw:h100-sxm (waited 3 s)" in missing.stdout

        ledger = json.loads((store / "matrix-cells.json").read_text())
        runs = [read_manifest(store / entry["run_id"]) for entry in ledger.values()]
        assert len(runs) == 6 and len({m.run_id for m in runs}) == 6  # every cell landed once
        assert all(m.status == "completed" and verify(store / m.run_id)[1] == [] for m in runs)
        for hardware in ("cpu-host", "gb10"):  # one cell per box at a time
            spans = sorted((m.started_at, m.finished_at) for m in runs if m.hardware == hardware)
            assert len(spans) == 3 and all(end <= start for (_, end), (start, _) in zip(spans, spans[1:])), spans
        listed = arena("runs", "--output", str(store))
        assert listed.returncode == 0 and all(m.run_id in listed.stdout for m in runs)
    finally:
        cluster.shutdown()
    for _ in range(20):  # every Ray process this test started is gone
        leftover = subprocess.run(["pgrep", "-f", "raylet|gcs_server|ray::"], capture_output=True, text=True).stdout.split()
        if not leftover:
            break
        time.sleep(0.5)
    assert leftover == [], "Ray processes left running"
