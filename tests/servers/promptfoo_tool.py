"""promptfoo, from npm, for the tests: a real ``promptfoo eval`` of a local application, graded by models on
the scripted judge server, manual ratings given through a real ``promptfoo view`` server (the request its
web viewer sends), and ``promptfoo export eval``.

``scripts/install-promptfoo.sh`` installs it in ``.promptfoo-tool``. Every run keeps promptfoo's database
and cache in its own folder (``PROMPTFOO_CONFIG_DIR``), telemetry, update checks and sharing off.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from pathlib import Path

from tests.servers.common import free_port, stop, wait_healthy

PROMPTFOO = Path(__file__).resolve().parents[2] / ".promptfoo-tool" / "node_modules" / ".bin" / "promptfoo"
#: the application under test: answers from a planted table (answers.json beside the config)
PROVIDER_JS = """
const answers = require('./answers.json');
module.exports = class RagApp {
  id() { return 'rag-app'; }
  async callApi(prompt, context) { return { output: answers[context.vars.question] ?? "I do not know." }; }
};
"""
#: what promptfoo's viewer records for a manual rating (its RESULT_RATING request)
MANUAL = "Manual result (overrides all other grading results)"


class Promptfoo:
    """``Promptfoo(folder)``: ``eval(config, answers)`` runs an eval and returns the file promptfoo wrote;
    ``rate(results, {test_index: (passed, comment)})`` rates results in a running viewer;
    ``export(eval_id)`` writes the eval as ``promptfoo export eval`` does."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.env = {
            **os.environ,
            "PROMPTFOO_CONFIG_DIR": str(self.folder / "home"),
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
            "PROMPTFOO_DISABLE_SHARING": "1",
            "OPENAI_API_KEY": "scripted",
            "PROMPTFOO_CACHE_ENABLED": "false",
            "NO_COLOR": "1",
        }

    def _run(self, *args: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [str(PROMPTFOO), *args], cwd=self.folder, env=self.env, capture_output=True, text=True, timeout=600
        )
        if done.returncode not in (0, 100):  # 100: some tests failed, as graders say they should
            raise AssertionError(f"promptfoo {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done

    def eval(self, config: dict, answers: dict[str, str], out: str = "results.json") -> Path:
        (self.folder / "provider.js").write_text(PROVIDER_JS)
        (self.folder / "answers.json").write_text(json.dumps(answers))
        (self.folder / "promptfooconfig.json").write_text(json.dumps(config, indent=1))
        self._run(
            "eval", "-c", "promptfooconfig.json", "-o", out, "--no-cache", "--no-progress-bar", "--max-concurrency", "2"
        )
        return self.folder / out

    def rate(self, results: Path, ratings: dict[int, tuple[bool, str]]) -> None:
        """Give manual ratings (test index -> pass, comment) through a real ``promptfoo view`` server."""
        data = json.loads(results.read_text())
        port = free_port()
        log = self.folder / "view.log"
        with log.open("w") as handle:
            process = subprocess.Popen(
                [str(PROMPTFOO), "view", "-n", "--port", str(port)],
                cwd=self.folder,
                env=self.env,
                stdout=handle,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url + "/health", process, 120, log, "promptfoo view")
            for result in data["results"]["results"]:
                if result["testIdx"] not in ratings:
                    continue
                passed, comment = ratings[result["testIdx"]]
                grading = result["gradingResult"]
                human = {
                    "pass": passed,
                    "score": float(passed),
                    "reason": MANUAL,
                    "comment": comment,
                    "assertion": {"type": "human"},
                }
                components = [c for c in grading["componentResults"] if c.get("assertion", {}).get("type") != "human"]
                body = {
                    **{k: v for k, v in grading.items() if k != "componentResults"},
                    "pass": passed,
                    "score": float(passed),
                    "reason": MANUAL,
                    "comment": comment,
                    "componentResults": components + [human],
                }
                request = urllib.request.Request(
                    f"{url}/api/eval/{data['evalId']}/results/{result['id']}/rating",
                    data=json.dumps(body).encode(),
                    method="POST",
                    headers={"Content-Type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=30) as reply:
                    assert reply.status == 200
        finally:
            stop(process)

    def export(self, eval_id: str, out: str) -> Path:
        self._run("export", "eval", eval_id, "-o", out)
        return self.folder / out
