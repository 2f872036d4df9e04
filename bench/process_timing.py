"""What the process benchmarks share (bench_busy.py, bench_annotators.py): one run of a command timed in wall
and CPU seconds, and the environment ``--env KEY=VALUE`` options make."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path


def timed(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, of the process) of one run of ``args``. Run it from a folder
    ``cwd`` without a ``calibrate`` package: ``python -m`` puts the working directory first on the path,
    before ``PYTHONPATH``, so run from a checkout it would time that checkout whatever ``--env`` says."""
    start = time.perf_counter()
    process = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code:
        raise SystemExit(f"{' '.join(args)} failed (exit {code}): {process.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def environment(settings: list[str]) -> dict[str, str]:
    """This process's environment with each ``KEY=VALUE`` of ``settings`` set."""
    env = dict(os.environ)
    for item in settings:
        key, _, value = item.partition("=")
        env[key] = value
    return env
