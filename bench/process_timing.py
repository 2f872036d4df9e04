"""What the process benchmarks share: one run of a command as a whole process, timed in wall and CPU
seconds with its peak memory (:func:`measure`), and the environment ``--env KEY=VALUE`` options make."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Measured:
    """One run: wall and CPU seconds (user + system, of the process), its peak resident MB, the load
    average before it, its exit code and its standard error."""

    wall: float
    cpu: float
    peak_mb: float
    load: float
    code: int
    stderr: str


def measure(
    args: list[str],
    *,
    stdout: Path | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    ok: tuple[int, ...] = (0,),
) -> Measured:
    """One run of ``args``, its standard output to the file ``stdout`` (as a user runs ``... > file``;
    discarded when None). Its standard error goes to a temporary file, not a pipe: a pipe read only once the
    process has ended could fill and block it. An exit code not in ``ok`` stops the benchmark, naming the
    command and the end of what it wrote to standard error."""
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile() as err, open(stdout if stdout is not None else os.devnull, "wb") as out:
        start = time.perf_counter()
        process = subprocess.Popen(args, env=env, cwd=cwd, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = code = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        err.seek(0)
        text = err.read().decode(errors="replace")
    if code not in ok:
        raise SystemExit(f"{' '.join(map(str, args))} failed (exit {code}): {text[-2000:]}")
    return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, load, code, text)


def timed(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``args`` (:func:`measure`). Run it from a folder ``cwd`` without
    a ``calibrate`` package: ``python -m`` puts the working directory first on the path, before
    ``PYTHONPATH``, so run from a checkout it would time that checkout whatever ``--env`` says."""
    run = measure(args, env=env, cwd=cwd)
    return run.wall, run.cpu


def environment(settings: list[str]) -> dict[str, str]:
    """This process's environment with each ``KEY=VALUE`` of ``settings`` set."""
    env = dict(os.environ)
    for item in settings:
        key, _, value = item.partition("=")
        env[key] = value
    return env
