"""Shared fixtures: a clean plugin environment for every test."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock

from arena_core.plugins import ENV_DISABLE_AUTOLOAD, ENV_DISABLED, ENV_STRICT, ENV_TRACE


@pytest.fixture(autouse=True)
def _clean_plugin_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests decide the plugin switches themselves; the caller's environment must not leak in."""
    for name in (ENV_STRICT, ENV_DISABLE_AUTOLOAD, ENV_DISABLED, ENV_TRACE, "ARENA_DEBUG"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def hooks():
    """The typed hooks of a manager with exactly the built-in plugins (strict: a misbehaving
    built-in fails the test). Shared: tests only read from it."""
    from arena_core import ArenaHooks, make_plugin_manager

    return ArenaHooks(make_plugin_manager(autoload=False, strict=True))


@pytest.fixture(scope="session")
def registry(hooks):
    """Everything the built-in plugins register."""
    return hooks.registry


@pytest.fixture(scope="session")
def tokenizer_path(tmp_path_factory: pytest.TempPathFactory):
    """A small byte-level BPE tokenizer.json, trained on generated text (no download)."""
    from arena_core.testing.text import write_test_tokenizer

    return write_test_tokenizer(tmp_path_factory.mktemp("tokenizer") / "tokenizer.json")


@pytest.fixture(scope="session")
def corpus_path(tmp_path_factory: pytest.TempPathFactory):
    """Generated English-like prose for prompts, so most tests need not read the ShareGPT file."""
    from arena_core.testing.text import english_like_text

    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(english_like_text(30000, seed=11), encoding="utf-8")
    return path


def shared_across_workers(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder for this test session, shared by its xdist workers (each worker's own base
    folder otherwise): what one worker builds there, the others read."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name


@pytest.fixture(scope="session")
def seed_store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed site's 17 cards imported once (``arena import --seeds``), with the error ledger
    of every run worked out and its fits kept in the store. A fresh seed ledger fits 17 times
    (minutes on 2 cores); every card, leaderboard and site view of an unchanged copy reads
    those fits instead (``shutil.copytree``, or the ``seed_store`` fixture). Built once per
    session: the first worker to ask builds it under a lock, the others wait and read it. A
    test of the import itself, or of fitting, or one that edits a seed card (which changes
    every other run's fit) imports its own."""
    folder = shared_across_workers(tmp_path_factory, "seed-template")
    folder.mkdir(parents=True, exist_ok=True)
    store, built = folder / "store", folder / "built"
    with FileLock(folder / "lock"):
        if not built.exists():
            shutil.rmtree(store, ignore_errors=True)
            for args in (["import", "--seeds"], ["leaderboard", "--prediction-error"]):
                done = subprocess.run([sys.executable, "-m", "arena_core", *args, "--output", str(store)], capture_output=True, text=True, timeout=900)
                assert done.returncode == 0, done.stderr[-2000:]
            built.touch()
    assert list((store / "calibrations").glob("ledger-fits--*.json"))  # the fits are kept
    return store


@pytest.fixture
def one_real_server_at_a_time(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Held by the real vLLM's test and by the embedded server's capacity search, which sets
    its TTFT limit from this machine's speed measured just before: with vLLM's decode taking a
    core beside it on 2 cores, the search's premise failed. The real servers' other tests
    (the embedded quality budget, the cache states, a server a command line starts) run beside
    vLLM: they adapt to, or do not depend on, the machine's speed."""
    with FileLock(shared_across_workers(tmp_path_factory, "real-server.lock")):
        yield


@pytest.fixture
def seed_store(seed_store_template: Path, tmp_path: Path) -> Path:
    """A copy of :func:`seed_store_template` of this test's own, at ``tmp_path / "store"``."""
    return Path(shutil.copytree(seed_store_template, tmp_path / "store"))


@pytest.fixture
def rig_run(tmp_path: Path):
    """``rig_run(*rig_args)``: measure chat and monday-peak (scaled x0.02) with ``arena run`` on the
    rig started with ``rig_args`` and the fixture tokenizer; returns the stored run's folder."""

    from arena_core.testing import rig_run_argv
    from arena_core.testing.fake_server import FakeServerProcess

    tokenizer = Path(__file__).resolve().parent / "fixtures" / "vllm" / "tokenizer"

    def run(*rig_args: str) -> Path:
        with FakeServerProcess(["--tokenizer", str(tokenizer / "tokenizer.json"), *rig_args]) as rig:
            argv = rig_run_argv(rig.url, tmp_path / "store", tokenizer=tokenizer, workloads="chat,monday-peak", scale="0.02")
            done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        (run_dir,) = [p for p in (tmp_path / "store").iterdir() if (p / "manifest.json").is_file()]
        return run_dir

    return run


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``pytest -n auto``: two workers per core, at most eight. Most slow tests wait -- on a rig
    that paces its tokens, a server that starts, a deadline that must pass -- rather than compute:
    with one worker per core the suite kept 2 cores 42 % busy (``time``: 21 CPU-minutes in 25)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    return max(2, min(8, 2 * cores))


#: The files that take longest (each over a minute on 2 cores: a real vLLM or llama.cpp, the seed
#: cohort fitted, a Ray cluster, a rig searched), longest first. Under ``pytest -n`` each worker
#: takes a whole file at a time (``--dist loadfile``: module fixtures are built once), in this
#: order (``--no-loadscope-reorder``), so that no long file starts last while the other workers
#: wait. The order only schedules; a file not named runs after them in its usual order.
LONGEST_FILES = (
    "test_vllm_live.py",
    "test_attached_engine.py",  # builds the shared seed template first thing
    "test_fleet.py",
    "test_capacity.py",
    "test_attach.py",
    # sixth: a worker's second file (xdist gives each worker two at the start), begun after the
    # seed template; its capacity search comes last and takes turns with the vLLM test
    # (one_real_server_at_a_time), which has about finished by then: no worker sits waiting
    "test_embedded.py",
    "test_site.py",
    "test_simulator.py",
    "test_faults.py",
    "test_trust_round2.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: place for place, name in enumerate(LONGEST_FILES)}
    # stable: the rest keep their order; within a file, a test holding the real-server lock last
    items.sort(key=lambda item: (rank.get(item.path.name, len(rank)), "one_real_server_at_a_time" in getattr(item, "fixturenames", ())))


#: argv of the child processes started while the current test runs (set up, call and tear down)
_STARTED: list[object] = []
#: Programs a test may start without being slow: the system's probes that answer at once
#: (``platform.processor()`` runs ``uname -p`` once per process; hardware detection asks
#: ``nvidia-smi`` where there is one).
QUICK_PROBES = frozenset({"uname", "nvidia-smi"})


def pytest_configure(config: pytest.Config) -> None:
    # The processes the tests start (hundreds of ``arena`` commands, and rigs, Ray workers and
    # sandboxes) read this repository's modules from the bytecode Python caches beside them, as a
    # user's Python does. Where the environment says to write none (PYTHONDONTWRITEBYTECODE, as
    # some sandboxes and CI images set), each would compile about 160 modules again, about 40 % of
    # a short command's time. Dropped before xdist starts its workers, which inherit it.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    original = subprocess.Popen.__init__

    def recording(self, args, *rest, **options):  # type: ignore[no-untyped-def]
        program = args if isinstance(args, (str, bytes, os.PathLike)) else next(iter(args), "")
        if Path(os.fsdecode(program).split()[0] if program else "").name not in QUICK_PROBES:
            _STARTED.append(args)
        original(self, args, *rest, **options)

    subprocess.Popen.__init__ = recording  # type: ignore[method-assign]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _STARTED.clear()  # before any fixture of this test: a module's or session's started for it counts


@pytest.fixture(autouse=True)
def _slow_when_it_starts_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that starts a child process (a server, Ray, pip, a browser, a command's own
    interpreter) or reads the seed template (fitted once per session: minutes) is marked
    ``slow``, so that ``pytest -m "not slow"`` stays an inner loop of a few minutes: this fails
    one that is not."""
    yield
    if request.node.get_closest_marker("slow") is None:
        if _STARTED:
            pytest.fail(f"not marked slow, but it started {len(_STARTED)} child processes (the first: {str(_STARTED[0])[:200]})")
        if "seed_store_template" in request.fixturenames:
            pytest.fail("not marked slow, but it reads the seed template (fitted once per session: minutes)")
