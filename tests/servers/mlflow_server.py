"""A real MLflow tracking server on 127.0.0.1 for the tests, and MLflow's own client to talk to it.

``scripts/install-mlflow.sh`` installs MLflow in its own virtual environment (``.mlflow-venv``); this
starts ``mlflow server`` on a free port with a SQLite backend and a local artifact store, telemetry off,
and waits until it answers. :meth:`MlflowServer.client` runs a Python script in MLflow's environment
(the tests log traces and feedback, and read runs back, with MLflow's API there) and returns what the
script printed as JSON.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.servers.common import free_port, run_script, stop, wait_healthy

MLFLOW_VENV = Path(__file__).resolve().parents[2] / ".mlflow-venv"
MLFLOW = MLFLOW_VENV / "bin" / "mlflow"
PYTHON = MLFLOW_VENV / "bin" / "python"
QUIET = {
    "MLFLOW_ENABLE_TELEMETRY": "false",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "DO_NOT_TRACK": "true",
    "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    "GIT_PYTHON_REFRESH": "quiet",
}


class MlflowServer:
    """``with MlflowServer(folder) as server:`` gives ``server.url`` and ``server.client(script)``."""

    def __init__(self, folder: Path, *, start_timeout_s: float = 180.0):
        self.folder = Path(folder)
        self.start_timeout_s = start_timeout_s
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
        return {**env, **QUIET, "PYTHONNOUSERSITE": "1"}

    def __enter__(self) -> MlflowServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._log = (self.folder / "server.log").open("w")
        self.process = subprocess.Popen(
            [
                str(MLFLOW),
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--workers",
                "1",
                "--backend-store-uri",
                f"sqlite:///{self.folder / 'mlflow.db'}",
                "--artifacts-destination",
                str(self.folder / "artifacts"),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self._env(),
            cwd=self.folder,
            start_new_session=True,
        )  # its own process group: the workers it starts stop with it
        try:
            wait_healthy(self.url + "/health", self.process, self.start_timeout_s, self.folder / "server.log", "MLflow")
        except RuntimeError:
            self.__exit__(None, None, None)
            raise
        return self

    def client(self, script: str, *args: str) -> object:
        """Run ``script`` with MLflow's Python, the tracking URI set; the JSON its last line printed."""
        return run_script(
            PYTHON, self.folder, f"import mlflow\nmlflow.set_tracking_uri({self.url!r})\n", script, args, self._env()
        )

    def __exit__(self, *exc) -> None:
        stop(self.process)
        self._log.close()
