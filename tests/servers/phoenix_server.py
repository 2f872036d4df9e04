"""A real Phoenix server on 127.0.0.1 for the tests, and Phoenix's own client to talk to it.

``scripts/install-phoenix.sh`` installs Phoenix in its own virtual environment (``.phoenix-venv``); this
starts ``phoenix serve`` on free ports (HTTP and gRPC) with a SQLite working directory, telemetry off,
and waits until it answers. :meth:`PhoenixServer.client` runs a Python script in Phoenix's environment
(the tests log traces and annotations with Phoenix's client and OpenTelemetry there).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.servers.common import free_port, run_script, stop, wait_healthy

PHOENIX_VENV = Path(__file__).resolve().parents[2] / ".phoenix-venv"
PHOENIX = PHOENIX_VENV / "bin" / "phoenix"
PYTHON = PHOENIX_VENV / "bin" / "python"


class PhoenixServer:
    """``with PhoenixServer(folder) as server:`` gives ``server.url`` and ``server.client(script)``."""

    def __init__(self, folder: Path, *, start_timeout_s: float = 180.0):
        self.folder = Path(folder)
        self.start_timeout_s = start_timeout_s
        self.port, self.grpc_port = free_port(), free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
        return {
            **env,
            "PHOENIX_WORKING_DIR": str(self.folder / "work"),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(self.grpc_port),
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "PYTHONNOUSERSITE": "1",
            "DO_NOT_TRACK": "1",
        }

    def __enter__(self) -> PhoenixServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._log = (self.folder / "server.log").open("w")
        self.process = subprocess.Popen(
            [str(PHOENIX), "serve"],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self._env(),
            cwd=self.folder,
            start_new_session=True,
        )
        try:
            wait_healthy(
                self.url + "/healthz", self.process, self.start_timeout_s, self.folder / "server.log", "Phoenix"
            )
        except RuntimeError:
            self.__exit__(None, None, None)
            raise
        return self

    def client(self, script: str, *args: str) -> object:
        """Run ``script`` with Phoenix's Python (``URL`` is the server's address); the JSON its last line printed."""
        return run_script(PYTHON, self.folder, f"URL = {self.url!r}\n", script, args, self._env())

    def __exit__(self, *exc) -> None:
        stop(self.process)
        self._log.close()
