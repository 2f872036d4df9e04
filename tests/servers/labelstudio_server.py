"""A real Label Studio server on 127.0.0.1 for the tests and benchmarks.

``scripts/install-label-studio.sh`` installs it in its own virtual environment (``.labelstudio-venv``);
this starts it on a free port with its version check, analytics and error reporting off, an admin
user and a legacy API token, and waits until it answers.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.servers.common import free_port, wait_healthy

LABEL_STUDIO = Path(__file__).resolve().parents[2] / ".labelstudio-venv" / "bin" / "label-studio"
ADMIN = ("admin@calibrate.test", "calibrate-admin-password")
TOKEN = "calibrate-test-legacy-token-0123456789"


class LabelStudioServer:
    """``with LabelStudioServer(data_dir) as server:`` gives ``server.url`` and ``server.token``."""

    def __init__(self, data_dir: Path, *, start_timeout_s: float = 300.0):
        self.data_dir = Path(data_dir)
        self.start_timeout_s = start_timeout_s  # the first start migrates its database (about 40 s here)
        self.token = TOKEN
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def _env(self) -> dict[str, str]:
        return {
            **os.environ,
            "LATEST_VERSION_CHECK": "false",
            "COLLECT_ANALYTICS": "false",
            "SENTRY_DSN": "",
            "FRONTEND_SENTRY_DSN": "",
            "LABEL_STUDIO_BASE_DATA_DIR": str(self.data_dir),
            "DJANGO_DB": "sqlite",
            "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
        }

    def set_password(self, email: str, password: str) -> None:
        """Give a user (made through the API, which sets no password) a password to log in with."""
        subprocess.run(
            [
                str(LABEL_STUDIO),
                "reset_password",
                "--username",
                email,
                "--password",
                password,
                "--data-dir",
                str(self.data_dir),
            ],
            env=self._env(),
            cwd=self.data_dir,
            check=True,
            capture_output=True,
            timeout=120,
        )

    def __enter__(self) -> LabelStudioServer:
        env = self._env()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._log = (self.data_dir / "server.log").open("w")
        self.process = subprocess.Popen(
            [
                str(LABEL_STUDIO),
                "start",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--no-browser",
                "--data-dir",
                str(self.data_dir),
                "--username",
                ADMIN[0],
                "--password",
                ADMIN[1],
                "--user-token",
                TOKEN,
                "--enable-legacy-api-token",
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=self.data_dir,
        )
        try:
            wait_healthy(
                self.url + "/health", self.process, self.start_timeout_s, self.data_dir / "server.log", "Label Studio"
            )
        except RuntimeError:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._log.close()
