"""Running model-written code: each sample in its own locked-down process, never in Arena's.

One mechanism per danger, each switchable in :class:`Limits` so a test can show it is the one
that holds:

* an endless loop -- a wall-clock deadline, then the whole process group and PID namespace are
  killed (``unshare --pid --fork --kill-child``), and ``RLIMIT_CPU``;
* a memory hog -- ``RLIMIT_AS``; a disk filler -- ``RLIMIT_FSIZE``;
* a fork bomb -- a ``pids`` cgroup with ``pids.max`` where the cgroup tree is writable, else
  ``RLIMIT_NPROC`` (which binds every user but root);
* reading secrets -- an empty environment, a fresh temporary directory as its working directory
  (removed afterwards), and Landlock (:mod:`arena_quality.guard`): reads only below the
  interpreter's and the system's library directories and its own;
* writing outside its directory -- Landlock; a socket -- a network namespace (``unshare --net``)
  with nothing in it but a loopback that is down.

What the machine does not allow is found by a probe when the sandbox is made and said in
:attr:`Sandbox.isolation`, which the card shows.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attrs import frozen

GUARD = Path(__file__).with_name("guard.py")
PRLIMIT = shutil.which("prlimit") or "prlimit"
CGROUP_PIDS = Path("/sys/fs/cgroup/pids")
#: How much of a sample's output is kept for its record.
OUTPUT_CHARS = 2_000
_counter = itertools.count()


@frozen(kw_only=True)
class Limits:
    wall_s: float = 10.0
    #: HumanEval's own harness gives a sample 3 s; its canonical solutions need milliseconds
    cpu_s: int = 3
    memory_bytes: int = 1 << 30
    file_bytes: int = 1 << 20
    processes: int = 16
    open_files: int = 64
    #: each layer that a test may switch off to prove the others do not hide its absence
    namespaces: bool = True
    lock_files: bool = True
    cgroup: bool = True
    empty_environment: bool = True


@frozen(kw_only=True)
class Outcome:
    passed: bool
    #: "passed", "failed (exit 1)", "timed out after 10 s", "killed by signal 9"
    status: str
    output: str = ""


class Sandbox:
    """Runs Python programs under :class:`Limits`; ``isolation`` says what could not be isolated."""

    def __init__(self, limits: Limits = Limits()) -> None:
        self.limits = limits
        self.prefix = self._namespaces() if limits.namespaces else []
        self.cgroup_root = self._cgroup_root() if limits.cgroup else None
        self.isolation = self._probe()

    # --- what this machine allows ------------------------------------------------------------

    def _namespaces(self) -> list[str]:
        """The ``unshare`` prefix that gives a network and a PID namespace, if one works here."""
        tool = shutil.which("unshare")
        if tool is None:
            return []
        as_user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
        prefix = [tool, *as_user, "--net", "--pid", "--fork", "--kill-child", "--"]
        try:
            done = subprocess.run([*prefix, sys.executable, "-I", "-S", "-c", "pass"], capture_output=True, timeout=20, env={})
        except (OSError, subprocess.TimeoutExpired):
            return []
        return prefix if done.returncode == 0 else []

    def _cgroup_root(self) -> Path | None:
        probe = CGROUP_PIDS / f"arena-sandbox-probe-{os.getpid()}"
        try:
            probe.mkdir()
            (probe / "pids.max").write_text("8")
            probe.rmdir()
        except OSError:
            return None
        return CGROUP_PIDS

    def _probe(self) -> str:
        """Run a probe sample that tries each thing a sample must not do; say what got through."""
        outside = Path(tempfile.mkdtemp(prefix="arena-sandbox-outside-"))
        try:
            program = PROBE.format(outside=str(outside / "written"))
            outcome, guard_note = self._run(program, keep_note=True)
            said = outcome.output
            gaps = []
            if guard_note != "locked":
                gaps.append(f"files not locked ({guard_note or 'the guard did not run'})")
            if (outside / "written").exists():
                gaps.append("a sample can write outside its directory")
            if "socket-open" in said:
                gaps.append("no network namespace (unshare refused)" if self.limits.namespaces else "network namespace switched off")
            if not self.prefix:
                gaps.append("no PID namespace: a sample's children are killed by process group only")
            if self.cgroup_root is None and os.geteuid() == 0:
                gaps.append("no pids cgroup and running as root: the process count is not limited")
            return "; ".join(gaps)
        finally:
            shutil.rmtree(outside, ignore_errors=True)

    # --- running -----------------------------------------------------------------------------

    def run(self, program: str) -> Outcome:
        """Run ``program`` to its end or its deadline; it passes when it exits 0."""
        return self._run(program)[0]

    def _run(self, program: str, *, keep_note: bool = False) -> tuple[Outcome, str]:
        workdir = Path(tempfile.mkdtemp(prefix="arena-sample-"))
        group = self._make_cgroup()
        try:
            shutil.copyfile(GUARD, workdir / "guard.py")
            (workdir / "sample.py").write_text(program, encoding="utf-8")
            env = {} if self.limits.empty_environment else dict(os.environ)
            env["ARENA_SANDBOX_FILES"] = "lock" if self.limits.lock_files else "off"
            command = [*self._limits_prefix(group), *self.prefix, sys.executable, "-I", "-S", "-B", "guard.py", "sample.py"]
            with open(workdir / "output.txt", "w+b") as output:
                started = time.monotonic()
                # no preexec_fn: samples are graded from several threads, and a fork that runs
                # Python before exec can deadlock there; the limits are set by programs exec'd in turn
                process = subprocess.Popen(
                    command, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, start_new_session=True
                )
                outcome = self._wait(process, started)
                # read through the descriptor the sample wrote to, never the path: the sample may
                # have replaced the path with a link to a file only Arena may read
                size = output.seek(0, os.SEEK_END)
                output.seek(max(0, size - 4 * OUTPUT_CHARS))
                text = output.read()[-OUTPUT_CHARS:].decode("utf-8", "replace")
            note = (workdir / "guard.txt").read_text()[:200] if keep_note and (workdir / "guard.txt").is_file() else ""
            return Outcome(passed=outcome[0], status=outcome[1], output=text), note
        finally:
            self._remove_cgroup(group)
            shutil.rmtree(workdir, ignore_errors=True)

    def _wait(self, process: subprocess.Popen, started: float) -> tuple[bool, str]:
        try:
            code = process.wait(timeout=self.limits.wall_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            return False, f"timed out after {self.limits.wall_s:g} s"
        finally:
            _kill_group(process)  # whatever it left behind in its group goes with it
        if code == 0:
            return True, "passed"
        if code < 0:
            return False, f"killed by signal {-code}"
        return False, f"failed (exit {code}, {time.monotonic() - started:.1f} s)"

    def _limits_prefix(self, group: Path | None) -> list[str]:
        """``sh`` joining the cgroup (when there is one), then ``prlimit`` setting the limits, each
        exec'ing the next: the sample inherits both."""
        limits = self.limits
        rlimits = [
            f"--cpu={limits.cpu_s}",
            f"--as={limits.memory_bytes}",
            f"--fsize={limits.file_bytes}",
            f"--nofile={limits.open_files}",
            *([f"--nproc={limits.processes}"] if os.geteuid() != 0 else []),  # root is exempt; the cgroup holds it
        ]
        joining = ["/bin/sh", "-c", f'echo $$ > {group / "cgroup.procs"} && exec "$@"', "sh"] if group is not None else []
        return [*joining, PRLIMIT, *rlimits, "--"]

    def _make_cgroup(self) -> Path | None:
        if self.cgroup_root is None:
            return None
        group = self.cgroup_root / f"arena-sandbox-{os.getpid()}-{next(_counter)}"
        try:
            group.mkdir()
            (group / "pids.max").write_text(str(self.limits.processes))
        except OSError:
            return None
        return group

    def _remove_cgroup(self, group: Path | None) -> None:
        if group is None:
            return
        for _ in range(50):  # the killed processes leave the group a moment after the kill
            try:
                for pid in (group / "cgroup.procs").read_text().split():
                    _kill_pid(int(pid))
                group.rmdir()
                return
            except OSError:
                time.sleep(0.02)


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def _kill_pid(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


#: What a sample must not be able to do, tried once when a sandbox is made.
PROBE = """
try:
    open({outside!r}, "w").write("x")
except OSError:
    pass
import socket
try:
    s = socket.socket()
    s.settimeout(1)
    s.connect(("127.0.0.1", 9))
    print("socket-open")
except OSError as error:
    if "refused" in str(error).lower():
        print("socket-open")
"""
