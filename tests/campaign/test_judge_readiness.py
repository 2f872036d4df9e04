"""`calibrate validate` checks `[judges]` (it said "valid, judges 0" and nothing of them): each judge's
library, API key variable and the cases it can score, without calling a model."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd

from calibrate import validate_campaign
from tests.conftest import run_cli, write_campaign

TOML = """name = "judged"
[metrics.faithfulness]
scale = "binary"
[metrics.answer_relevancy]
scale = "binary"

[judges.faith-gpt]
library = "deepeval"
metric = "faithfulness"
model = { provider = "openai", name = "gpt-4o-mini", api_key_env = "W26_TEST_KEY" }

[judges.rel-gpt]
library = "deepeval"
metric = "answer_relevancy"
model = { provider = "openai", name = "gpt-4o-mini", base_url = "http://127.0.0.1:9/v1" }
"""


def make(tmp_path):
    cases = [
        {"case_id": "a", "input": "q?", "actual_output": "x.", "retrieval_context": ["c"]},
        {"case_id": "b", "input": "r?", "actual_output": "y."},
    ]
    empty = pd.DataFrame(columns=["case_id", "metric", "rater", "rater_kind", "value"])
    return write_campaign(tmp_path / "campaign", TOML, empty, cases)


def test_each_judge_is_checked_and_counted(tmp_path, monkeypatch):
    monkeypatch.delenv("W26_TEST_KEY", raising=False)
    doc = validate_campaign(make(tmp_path))
    assert {m["metric"]: (m["judges"], m["judges_declared"]) for m in doc["metrics"]} == {
        "faithfulness": (0, ["faith-gpt"]),
        "answer_relevancy": (0, ["rel-gpt"]),
    }
    judges = {j["judge"]: j for j in doc["judges"]}
    faith, rel = judges["faith-gpt"], judges["rel-gpt"]
    assert faith["reads"] == ["input", "actual_output", "retrieval_context"] and faith["cases_ready"] == 1
    assert not faith["ready"] and faith["problems"] == [
        "the environment variable W26_TEST_KEY its model names for the API key is not set (calibrate judge reads "
        "it when it runs)",
        "1 of 2 case(s) lack retrieval_context (the metric reads input, actual_output, retrieval_context): b; "
        "calibrate judge refuses them unless --skip-incomplete",
    ]
    assert rel["ready"] and rel["problems"] == [] and rel["cases_ready"] == 2
    monkeypatch.setenv("W26_TEST_KEY", "sk-test")
    assert (
        len(next(j for j in validate_campaign(make(tmp_path))["judges"] if j["judge"] == "faith-gpt")["problems"]) == 1
    )


def test_the_command_line_shows_them(tmp_path):
    folder = make(tmp_path)
    env = {"W26_TEST_KEY": None}  # unset
    result = run_cli("validate", folder, env=env)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "[judges] declared" in text and "judges with ratings" in text
    assert "not ready: judge faith-gpt (deepeval faithfulness into faithfulness, model gpt-4o-mini" in text
    assert "  - the environment variable W26_TEST_KEY its model names" in text
    assert (
        "ready: judge rel-gpt (deepeval answer_relevancy into answer_relevancy" in text and "2 case(s) to score" in text
    )
    doc = json.loads(run_cli("validate", folder, "--json", env=env).stdout)
    assert [j["judge"] for j in doc["judges"]] == ["faith-gpt", "rel-gpt"]


def test_a_missing_library_says_what_to_install(tmp_path):
    """In a Python where DeepEval is not installed (as in a core install), validate names the extra."""
    folder = make(tmp_path)
    program = (
        "import sys\nfrom importlib.abc import MetaPathFinder\n"
        "class Absent(MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'deepeval':\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Absent())\n"
        "from calibrate.cli import main\n"
        f"main(['validate', {str(folder)!r}], prog_name='calibrate')\n"
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "DeepEval is not installed: pip install 'calibrate-judges[deepeval]'" in result.stdout
