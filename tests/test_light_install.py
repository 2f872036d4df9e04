"""The core package works without its extras: the demo needs none of torch, DeepEval, RAGAS or the
Label Studio SDK, and a command that needs one names the extra to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pandas as pd

from tests.conftest import write_campaign

EXTRAS = (
    "torch",
    "deepeval",
    "ragas",
    "label_studio_sdk",
    "sentence_transformers",
    "langchain_community",
    "instructor",
    "openai",
    "anthropic",
)


def _without_extras(*argv: str) -> subprocess.CompletedProcess:
    """``calibrate ARGV`` in a Python where importing any extra fails, as in a core-only install."""
    program = textwrap.dedent(f"""
        import sys
        from importlib.abc import MetaPathFinder
        EXTRAS = {EXTRAS!r}

        class Absent(MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in EXTRAS:
                    raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
                return None

        sys.meta_path.insert(0, Absent())
        from calibrate.cli import main
        main({list(argv)!r}, prog_name="calibrate")
        """)
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600)


def test_the_demo_needs_no_extra(tmp_path):
    result = _without_extras("demo", "--out", str(tmp_path / "demo"), "--n-boot", "0")
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "demo" / "report.html").stat().st_size > 10_000
    imported = _without_extras("stats", "--help")
    assert imported.returncode == 0


def test_a_command_that_needs_an_extra_names_it(tmp_path):
    toml = """
name = "judged"
[metrics.faithfulness]
scale = "binary"
[judges.de-faith]
library = "deepeval"
metric = "faithfulness"
model = { provider = "openai", name = "m", base_url = "http://127.0.0.1:9/v1" }
"""
    folder = write_campaign(
        tmp_path / "c",
        toml,
        pd.DataFrame(columns=["case_id", "metric", "rater", "rater_kind", "value"]),
        [{"case_id": "a", "input": "q?", "actual_output": "a.", "retrieval_context": ["c"]}],
    )
    judged = _without_extras("judge", str(folder))
    assert judged.returncode == 2 and "pip install 'calibrate-judges[deepeval]'" in judged.stderr
    assert "Traceback" not in judged.stderr
    # each library its own extra (issue 26: [judges] brought both, and langchain, for either)
    ragas = folder.parent / "r"
    ragas_toml = toml.replace("de-faith", "ra-faith").replace('library = "deepeval"', 'library = "ragas"')
    write_campaign(
        ragas,
        ragas_toml,
        pd.DataFrame(columns=["case_id", "metric", "rater", "rater_kind", "value"]),
        [{"case_id": "a", "input": "q?", "actual_output": "a.", "retrieval_context": ["c"]}],
    )
    judged = _without_extras("judge", str(ragas))
    assert judged.returncode == 2 and "pip install 'calibrate-judges[ragas]'" in judged.stderr, judged.stderr
    pushed = _without_extras("labelstudio", "push", str(folder), "--url", "http://127.0.0.1:9", "--api-key", "k")
    assert pushed.returncode == 2 and "pip install 'calibrate-judges[labelstudio]'" in pushed.stderr
    assert "Traceback" not in pushed.stderr
