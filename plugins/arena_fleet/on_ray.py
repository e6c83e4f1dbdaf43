"""Cells as Ray tasks (``shared/spec/fleet.md``): each asks for one unit of its hardware's custom
resource (``hw:gb10``), which a box advertises once (``ray start --resources='{"hw:gb10": 1}'``),
so a cell only ever runs on a box of its kind and a box runs one cell at a time.

Ray does not fail a task no box can take: it waits. So the driver watches the cluster's
resources itself: a cell whose hardware no box advertises fails after ``wait_s`` with one line
naming the resource, and so does a queued or running cell whose last box of that kind left.
A task on a box that died is retried once by Ray, on another box of the same kind if there is one.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from arena_core import UsageError
from arena_fleet.execute import POLL_S, CellReport, Outcome, describe, run_cell_here, settle
from arena_fleet.matrix import Cell

INSTALL_HINT = "pip install 'arena-bench[fleet]'"
#: How a box's owner sets the niceness of Ray's workers (:func:`at_normal_priority`).
RAY_NICENESS = "RAY_worker_niceness"
#: How long joining a cluster may take before it is an error.
JOIN_DEADLINE_S = 60.0


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError(f"--ray: Ray is not installed here; it is an optional extra: {INSTALL_HINT}") from None
    return ray


@contextlib.contextmanager
def _loopback_kept(address: str) -> Iterator[None]:
    """Join a cluster bound to loopback at its loopback address. Ray rewrites 127.0.0.1 and
    localhost in an address it joins to this machine's network address (for boxes that reach
    each other), where a cluster started with ``--node-ip-address=127.0.0.1`` (one box, or a
    test) does not listen. Ray has no setting for this, so its one resolver is bypassed while
    joining such an address, and only then."""
    import ray._private.services as services

    host = address.rsplit(":", 1)[0].strip("[]")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        yield
        return
    resolve = services.resolve_ip_for_localhost
    services.resolve_ip_for_localhost = lambda found: found
    try:
        yield
    finally:
        services.resolve_ip_for_localhost = resolve


def join_cluster(ray: Any, address: str, node_ip_address: str | None, deadline_s: float = JOIN_DEADLINE_S) -> None:
    """Connect this process to the cluster at ``address``, or fail in one line within
    ``deadline_s`` (left alone, Ray retries an unreachable head for many minutes)."""
    if problem := _unreachable(address):  # before Ray: it would retry for minutes and print its own C++ log lines
        raise UsageError(f"--ray {address}: no Ray cluster answers there ({problem})")
    failed: list[BaseException] = []

    def connect() -> None:
        try:
            with _loopback_kept(address):
                ray.init(address=address, _node_ip_address=node_ip_address, logging_level=logging.ERROR, log_to_driver=False, configure_logging=False)
        except Exception as exc:  # noqa: BLE001 - reported below, in one line
            failed.append(exc)

    logging.getLogger("ray").setLevel(logging.ERROR)  # Ray's notices are not this command's output
    joining = threading.Thread(target=connect, name="ray-join", daemon=True)
    joining.start()
    joining.join(deadline_s)
    if joining.is_alive():
        raise UsageError(f"--ray {address}: no Ray cluster answered there within {deadline_s:g} s")
    if failed:
        raise UsageError(f"--ray {address}: cannot join the Ray cluster there ({_one_line(failed[0])})") from None


#: How long the head's port may take to accept a connection before the address is said to refuse.
PROBE_DEADLINE_S = 3.0


def _unreachable(address: str) -> str | None:
    """Why nothing listens at ``address`` ("HOST:PORT"), or None: it accepts a connection (or the
    address is Ray's own word, ``auto``, which Ray resolves itself)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isascii() or not port.isdecimal():
        return None
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_DEADLINE_S):
            return None
    except OSError as exc:
        return exc.strerror or type(exc).__name__


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


def at_normal_priority() -> None:
    """This process, and the cell it starts, at the box's normal priority: Ray starts its workers
    niced by default (15), and a server started by a niced cell would be measured behind every
    other process of the box. A niceness the box's owner chose (``RAY_worker_niceness`` set when
    Ray started, which its workers inherit) is kept. Lowering a niceness needs privilege (root,
    or CAP_SYS_NICE); without it the cell runs as Ray started it, which ``arena fleet join``'s
    line avoids by starting Ray with ``RAY_worker_niceness=0``."""
    if RAY_NICENESS in os.environ:
        return
    with contextlib.suppress(OSError):
        if os.getpriority(os.PRIO_PROCESS, 0) > 0:
            os.setpriority(os.PRIO_PROCESS, 0, 0)


def _cell_on_this_box(argv: Sequence[str]) -> CellReport:
    """The Ray task: the cell, run on the box Ray chose at normal priority, named by its Ray node
    (boxes of one cluster may share a host name; on one test machine they all do)."""
    import ray

    at_normal_priority()
    return attrs.evolve(run_cell_here(argv), node=f"node {ray.get_runtime_context().get_node_id()[:8]}")


def run_on_ray(cells: Sequence[Cell], store: Path, *, wait_s: float, say: Callable[[str], None]) -> list[Outcome]:
    """Every cell as a Ray task of the cluster this process joined; outcomes in ``cells``' order."""
    ray = import_ray()
    task = ray.remote(max_retries=1, num_cpus=0)(_cell_on_this_box)  # the hardware resource alone places it
    count = len(cells)
    outcomes: list[Outcome | None] = [None] * count
    waiting = {index: time.monotonic() for index in range(count)}  # not yet submitted: since when
    running: dict[Any, tuple[int, float]] = {}  # task -> (cell index, queued at by time.time())
    orphaned: dict[Any, float] = {}  # task whose hardware no box advertises any more -> since when

    def finish(index: int, outcome: Outcome) -> None:
        outcomes[index] = outcome
        say(describe(index + 1, count, outcome))

    while waiting or running:
        advertised = ray.cluster_resources()
        for index, since in list(waiting.items()):
            cell = cells[index]
            if advertised.get(cell.resource, 0) >= 1:
                running[task.options(resources={cell.resource: 1}).remote(cell.run_argv())] = (index, time.time())
                del waiting[index]
                say(f"[{index + 1}/{count}] {cell.label()}: queued for a box with {cell.resource}")
            elif time.monotonic() - since > wait_s:
                del waiting[index]
                finish(index, Outcome(cell=cell, status="failed", reason=f"no box in the cluster advertises {cell.resource} (waited {wait_s:g} s)"))
        if not running:
            time.sleep(POLL_S)
            continue
        done, _ = ray.wait(list(running), num_returns=1, timeout=POLL_S)
        for ref in done:
            index, queued_at = running.pop(ref)
            orphaned.pop(ref, None)
            try:
                report = ray.get(ref)
            except ray.exceptions.RayError as exc:
                finish(index, Outcome(cell=cells[index], status="failed", reason=f"the task failed: {_one_line(exc)}", total_s=time.time() - queued_at))
            else:
                finish(index, settle(store, cells[index], report, queued_at))
        for ref, (index, queued_at) in list(running.items()):
            if advertised.get(cells[index].resource, 0) >= 1:
                orphaned.pop(ref, None)
            elif time.monotonic() - orphaned.setdefault(ref, time.monotonic()) > wait_s:
                ray.cancel(ref, force=True)
                del running[ref], orphaned[ref]
                reason = f"the last box with {cells[index].resource} left the cluster (waited {wait_s:g} s for another)"
                finish(index, Outcome(cell=cells[index], status="failed", reason=reason, total_s=time.time() - queued_at))
    return [o for o in outcomes if o is not None]
