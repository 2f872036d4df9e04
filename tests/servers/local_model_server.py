"""A real judge model on 127.0.0.1 for the tests: llama.cpp's OpenAI-compatible server, run in-process by
xllamacpp in its own virtual environment.

``scripts/install-local-model.sh`` installs xllamacpp in ``.local-model-venv`` and puts the GGUF models
in ``.local-models`` (pinned and hash-checked). :class:`LocalModelServer` starts one model on a free port
with that environment's Python, as a subprocess in its own process group, waits until ``/health``
answers, and stops it. ``server.url`` is the OpenAI base URL (ending in ``/v1``).

One slot (``n_parallel = 1``): on a 2-core machine a second request would only share the cores, so the
judges run with one call at a time to the server. ``OMP_WAIT_POLICY=PASSIVE``: llama.cpp's OpenMP
threads otherwise busy-wait between calls and starve everything else on the machine.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.servers.common import free_port, stop, wait_healthy

ROOT = Path(__file__).resolve().parents[2]
LOCAL_MODEL_VENV = ROOT / ".local-model-venv"
PYTHON = LOCAL_MODEL_VENV / "bin" / "python"
MODELS = ROOT / ".local-models"
QWEN = MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SMOLLM = MODELS / "smollm2-135m-instruct-q4_1.gguf"

# run by the local model environment's Python: argv = model, port, alias, context, threads
SERVE = """
import signal, sys, threading
import xllamacpp

model, port, alias, n_ctx, threads = sys.argv[1:6]
params = xllamacpp.CommonParams()
params.model.path = model
params.model_alias = {alias}
params.hostnames = ["127.0.0.1"]
params.port = int(port)
params.n_ctx = int(n_ctx)
params.n_parallel = 1
params.cpuparams.n_threads = int(threads)
params.cpuparams_batch.n_threads = int(threads)
params.ui = False
params.warmup = False
server = xllamacpp.Server(params)
print("listening on", server.listening_address, flush=True)
stopped = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stopped.set())
signal.signal(signal.SIGINT, lambda *_: stopped.set())
stopped.wait()
"""


class LocalModelServer:
    """``with LocalModelServer(folder, model, alias) as server:`` gives ``server.url`` (``.../v1``) and
    ``server.model`` (the name requests use)."""

    def __init__(
        self,
        folder: Path,
        model: Path = QWEN,
        alias: str = "qwen",
        *,
        n_ctx: int = 4096,
        threads: int | None = None,
        start_timeout_s: float = 180.0,
    ):
        self.folder = Path(folder)
        self.model_path = Path(model)
        self.model = alias
        self.n_ctx = n_ctx
        # CALIBRATE_TEST_MODEL_THREADS: fewer threads beside other work (the default: the cores, at most 4)
        self.threads = (
            threads or int(os.environ.get("CALIBRATE_TEST_MODEL_THREADS") or 0) or max(1, min(os.cpu_count() or 1, 4))
        )
        self.start_timeout_s = start_timeout_s
        self.port = free_port()
        self.root = f"http://127.0.0.1:{self.port}"
        self.url = self.root + "/v1"
        self.log_path = self.folder / f"{alias}-server.log"

    def _env(self) -> dict[str, str]:
        return {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONNOUSERSITE": "1"}

    def __enter__(self) -> LocalModelServer:
        if not self.model_path.is_file():
            raise RuntimeError(f"the local model {self.model_path} is missing (run scripts/install-local-model.sh)")
        self.folder.mkdir(parents=True, exist_ok=True)
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [
                str(PYTHON),
                "-c",
                SERVE,
                str(self.model_path),
                str(self.port),
                self.model,
                str(self.n_ctx),
                str(self.threads),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=self._env(),
            cwd=self.folder,
            start_new_session=True,
        )
        try:
            wait_healthy(
                self.root + "/health",
                self.process,
                self.start_timeout_s,
                self.log_path,
                f"the local model server ({self.model_path.name})",
            )
        except RuntimeError:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        stop(self.process)
        self._log.close()
