"""The small campaign the fingerprint tests share: 40 faithfulness cases (every other one with an invented
claim), one annotator's verdicts, and one judge whose model a scripted judge server answers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from calibrate import load_campaign
from calibrate.judges.runner import run_judges
from tests.conftest import write_campaign

N = 40


def cases() -> list[dict]:
    """The 40 cases: even ones faithful, odd ones with an invented claim."""
    out = []
    for i in range(N):
        fact = f"Fact {i} is true."
        answer = fact if i % 2 == 0 else f"{fact} Invented claim {i} is false."
        out.append(
            {
                "case_id": f"c{i:03d}",
                "input": f"question {i}?",
                "actual_output": answer,
                "retrieval_context": [fact, f"Other fact {i} holds."],
            }
        )
    return out


def toml(url: str, model: str = "careful", library: str = "deepeval") -> str:
    """``campaign.toml``: the judge ``faith-gpt`` asks ``model`` of the server at ``url``."""
    return f'''
name = "fp"
[metrics.faithfulness]
scale = "binary"
max_false_pass = 0.2
[judges.faith-gpt]
library = "{library}"
metric = "faithfulness"
model = {{ provider = "openai", name = "{model}", base_url = "{url}" }}
'''


def humans() -> pd.DataFrame:
    """One annotator: pass on the faithful cases, fail on the others."""
    return pd.DataFrame(
        {
            "case_id": [c["case_id"] for c in cases()],
            "metric": "faithfulness",
            "rater": "ann",
            "rater_kind": "human",
            "value": [1 - i % 2 for i in range(N)],
        }
    )


def judged_campaign(folder: Path, url: str, model: str = "careful") -> Path:
    """The campaign written in ``folder``, its judge run once against the server at ``url``."""
    folder = write_campaign(folder, toml(url, model), humans(), cases())
    run_judges(load_campaign(folder))
    return folder
