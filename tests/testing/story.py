"""A team's campaign for the CI tests: faithfulness and answer relevancy of a RAG bot, a GPT judge on
faithfulness and a Llama judge on relevancy, human labels on every case."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tests.conftest import write_campaign

TOML = """name = "support-bot"
[metrics.faithfulness]
scale = "binary"
[metrics.answer_relevancy]
scale = "binary"
[raters.faithfulness-gpt4o]
family = "gpt"
model = "gpt-4o"
[raters.relevancy-llama]
family = "llama"
model = "llama-3.1-70b"
"""


def support_bot(folder: Path, *, n: int = 150, faithful_judge: str = "good", seed: int = 0) -> Path:
    """The campaign at ``folder``: the faithfulness judge ``good`` (its score follows the human verdict)
    or ``coin`` (uniformly random); the relevancy judge is always a coin flip, so a gate that checks
    it fails."""
    rng = np.random.default_rng(seed)
    ids = [f"ticket-{i:04d}" for i in range(n)]
    human_faith = (rng.random(n) < 0.6).astype(int)
    human_rel = (rng.random(n) < 0.7).astype(int)
    if faithful_judge == "good":
        faith = np.clip(0.7 * human_faith + rng.normal(0.15, 0.1, n), 0, 1).round(3)
    else:
        faith = rng.random(n).round(3)
    rel = rng.random(n).round(3)
    frames = [
        pd.DataFrame(
            {
                "case_id": ids * 2,
                "metric": metric,
                "rater": ["ana"] * n + [judge] * n,
                "rater_kind": ["human"] * n + ["judge"] * n,
                "value": np.r_[human, scores],
            }
        )
        for metric, judge, human, scores in (
            ("faithfulness", "faithfulness-gpt4o", human_faith, faith),
            ("answer_relevancy", "relevancy-llama", human_rel, rel),
        )
    ]
    cases = [
        {
            "case_id": c,
            "input": f"question {i}",
            "actual_output": f"answer {i}",
            "retrieval_context": [f"passage {i}"],
            "metadata": {"generator_family": "claude"},
        }
        for i, c in enumerate(ids)
    ]
    return write_campaign(folder, TOML, pd.concat(frames, ignore_index=True), cases)
