"""The README's "What an annotation looks like": the case, the result an annotator submits and the rows
`calibrate labelstudio pull` writes are read from the README itself, and the pull of that result (from an
export file holding it) must write exactly those rows, with the span and chunks kept. No server needed."""

import json
import re
from pathlib import Path

import pandas as pd

from calibrate import load_campaign
from calibrate.humans.labelstudio.client import pull_file
from calibrate.humans.labelstudio.interface import task_data
from calibrate.humans.labelstudio.store import RATINGS_FILE, LabelStore
from tests.conftest import write_campaign

README = Path(__file__).resolve().parents[2] / "docs" / "labelstudio.md"
TOML = """name = "support-bot"
[metrics.faithfulness]
scale = "binary"
[metrics.contextual_relevancy]
scale = "continuous"
range = [0, 1]
human_pass = 0.5
"""


def section_blocks(title: str) -> list[tuple[str, str]]:
    """(language, text) of the fenced blocks of the README section ``title``."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"### {title}\n")
    end = text.index("\n#", start + 4)
    return re.findall(r"```(\w*)\n(.*?)```", text[start:end], re.S)


def test_the_readmes_annotation_result_pulls_into_the_readmes_rows(tmp_path):
    (_, case_text), (_, result_text), (language, rows_text) = section_blocks("What an annotation looks like")
    assert language == "csv"
    case, result = json.loads(case_text), json.loads(result_text)
    span = next(r["value"] for r in result if r["type"] == "labels")
    assert case["actual_output"][span["start"] : span["end"]] == span["text"]  # the offsets the README shows
    folder = write_campaign(
        tmp_path / "c", TOML, pd.DataFrame(columns=["case_id", "metric", "rater", "rater_kind", "value"]), [case]
    )
    export = [
        {
            "id": 1,
            "data": task_data(case["case_id"], case),
            "annotations": [{"id": 11, "completed_by": 3, "result": result, "updated_at": "2026-11-03T10:00:00Z"}],
        }
    ]
    (tmp_path / "export.json").write_text(json.dumps(export), encoding="utf-8")
    summary = pull_file(load_campaign(folder), tmp_path / "export.json")
    assert (summary["annotations"], summary["labels"]) == (1, 2)
    assert (folder / RATINGS_FILE).read_text(encoding="utf-8").strip() == rows_text.strip()
    store = LabelStore(folder)
    details = {h["metric"]: h["details"] for h in store.history()}
    store.close()
    assert details == {
        "faithfulness": {"unsupported_spans": [{k: span[k] for k in ("start", "end", "text")}]},
        "contextual_relevancy": {"chunks": ["relevant", "not relevant", "relevant"]},
    }
