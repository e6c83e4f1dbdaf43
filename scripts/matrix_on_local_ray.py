"""Run a matrix on a Ray cluster of several nodes on this one machine, bound to loopback: to try
``arena matrix run --ray`` before there are boxes, and to measure what Ray costs around each cell.

    python scripts/matrix_on_local_ray.py MATRIX.toml --node cpu-host --node gb10 [--output DIR]

Each ``--node`` starts one Ray node (its own raylet process) advertising ``hw:NAME``. Every
process binds to 127.0.0.1, with the dashboard and usage statistics off. (``ray start
--node-ip-address=127.0.0.1`` is rewritten by Ray to the machine's network address, so this
uses Ray's own ``ray.cluster_utils.Cluster``.) It prints how long the cluster took to start,
then runs ``arena matrix plan`` and ``arena matrix run --ray`` against it, and stops every node.
Needs Ray: ``pip install 'arena-bench[fleet]'``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("matrix", help="the matrix file")
    parser.add_argument("--node", action="append", required=True, metavar="HARDWARE", help="a node advertising hw:HARDWARE (repeatable)")
    parser.add_argument("--output", default="arena-results", help="results directory (default: arena-results)")
    args = parser.parse_args()
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    try:
        from ray.cluster_utils import Cluster
    except ImportError:
        raise SystemExit("this needs Ray: pip install 'arena-bench[fleet]'") from None
    loopback = {"node_ip_address": "127.0.0.1", "include_dashboard": False, "num_cpus": 1}
    started = time.monotonic()
    cluster = Cluster(initialize_head=True, connect=False, head_node_args={**loopback, "resources": {f"hw:{args.node[0]}": 1}})
    try:
        for hardware in args.node[1:]:
            cluster.add_node(**loopback, resources={f"hw:{hardware}": 1})
        print(
            f"Ray: {len(args.node)} nodes on 127.0.0.1 ({', '.join(args.node)}) started in {time.monotonic() - started:.1f} s; head at {cluster.address}",
            flush=True,
        )
        arena = [sys.executable, "-m", "arena_core", "matrix"]
        subprocess.run([*arena, "plan", args.matrix, "--output", args.output], check=False)
        ran = subprocess.run([*arena, "run", args.matrix, "--output", args.output, "--ray", cluster.address, "--node-ip-address", "127.0.0.1"], check=False)
        return ran.returncode
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
