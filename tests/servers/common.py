"""What the tests' real servers (Label Studio, MLflow) share: a free port on 127.0.0.1, and waiting for
one to answer its health check."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import textwrap
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    """A port on 127.0.0.1 nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_healthy(url: str, process: subprocess.Popen, timeout_s: float, log: Path, name: str) -> None:
    """Return once ``url`` answers 200; raise RuntimeError with the end of the server's log when the
    process ends first or ``timeout_s`` passes (the caller stops the server)."""
    deadline = time.time() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            pass
        if process.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"{name} did not start: " + log.read_text()[-3000:])
        time.sleep(0.5)


def run_script(
    python: Path, folder: Path, prelude: str, script: str, args: tuple[str, ...], env: dict[str, str]
) -> object:
    """Run ``prelude`` + ``script`` with a server's own Python (in its virtual environment); the JSON its
    last line printed (None when it printed nothing)."""
    path = folder / f"script-{time.monotonic_ns()}.py"
    path.write_text(prelude + textwrap.dedent(script))
    done = subprocess.run(
        [str(python), str(path), *args], capture_output=True, text=True, env=env, cwd=folder, timeout=600
    )
    if done.returncode != 0:
        raise AssertionError(f"the script failed:\n{done.stderr[-4000:]}")
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    return json.loads(lines[-1]) if lines else None


def stop(process: subprocess.Popen) -> None:
    """Stop a server started in its own process group (``start_new_session``), with every worker it started."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    except ProcessLookupError:
        pass
