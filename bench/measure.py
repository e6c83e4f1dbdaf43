"""What both bench scripts share: run a client as a child process pinned to one core, and read
the CPU time it used (user + system, from ``os.wait4``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

CLIENT_CORE, SERVER_CORE = 1, 0


def run_measured(command: list[str], env: dict | None = None) -> tuple[float, str]:
    """Run ``command`` pinned to the client core; its CPU seconds and its standard output."""
    if shutil.which("taskset"):
        command = ["taskset", "-c", str(CLIENT_CORE), *command]
    with tempfile.TemporaryFile("w+") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{command[:5]}... exited with {os.waitstatus_to_exitcode(status)}")
        output.seek(0)
        return usage.ru_utime + usage.ru_stime, output.read()
