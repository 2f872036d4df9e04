"""Can each judge of ``[judges]`` run here? What ``calibrate validate`` checks of them without calling a
model or importing its library: the library installed, the API key's variable set, cases to score that
have every field the metric reads. (``calibrate judge`` checks the metric's settings against the
library itself when it runs.)"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from calibrate.campaign.model import Campaign

__all__ = ["LISTED_CASES", "judge_readiness"]

#: case ids listed in a readiness problem (and how many more)
LISTED_CASES = 5
_LIBRARIES = {"deepeval": "DeepEval", "ragas": "RAGAS"}


def _installed(library: str) -> bool:
    try:
        return importlib.util.find_spec(library) is not None
    except (ImportError, ValueError):  # a broken install, or a module without a spec
        return False


def judge_readiness(campaign: Campaign) -> list[dict[str, Any]]:
    """Each judge of ``[judges]``: what it reads, how many ratings it has, and why it cannot run here.

    Parameters
    ----------
    campaign : Campaign

    Returns
    -------
    list of dict
        One per judge, by name: ``{"judge", "library", "metric", "into", "model", "reads", "ratings",
        "cases_ready", "problems", "ready"}``; ``problems`` say what to do.

    Examples
    --------
    >>> import pandas as pd
    >>> from calibrate.campaign.judge_specs import JudgeSpec, ModelSpec
    >>> from calibrate.campaign import campaign_from_frames
    >>> c = campaign_from_frames({"name": "n", "metrics": {"faithfulness": {"scale": "binary"}}}, pd.DataFrame(
    ...     columns=["case_id", "metric", "rater", "rater_kind", "value"]))
    >>> c.cases = {"a": {"input": "q", "actual_output": "x"}}
    >>> c.judges = {"j": JudgeSpec("j", "deepeval", "faithfulness", "faithfulness", ModelSpec("openai", "m"), None)}
    >>> [p.split(":")[0] for p in judge_readiness(c)[0]["problems"] if "lack" in p]
    ['1 of 1 case(s) lack retrieval_context (the metric reads input, actual_output, retrieval_context)']
    """
    found = []
    ratings = campaign.ratings
    cases = campaign.cases or {}
    for name, spec in sorted(campaign.judges.items()):
        problems = []
        if not _installed(spec.library):
            problems.append(
                f"{_LIBRARIES.get(spec.library, spec.library)} is not installed: pip install "
                f"'calibrate-judges[{spec.library}]'"
            )
        for model, role in ((spec.model, "model"), (spec.embeddings, "embeddings model")):
            if model is not None and model.api_key_env and not os.environ.get(model.api_key_env):
                problems.append(
                    f"the environment variable {model.api_key_env} its {role} names for the API key "
                    "is not set (calibrate judge reads it when it runs)"
                )
        fields = tuple(spec.fields)
        lacking = {cid: [f for f in fields if case.get(f) in (None, "", [])] for cid, case in sorted(cases.items())}
        lacking = {cid: missing for cid, missing in lacking.items() if missing}
        if not cases:
            problems.append(
                "the campaign has no cases.jsonl: a judge scores cases (calibrate cases import, or calibrate collect)"
            )
        elif lacking:
            which = sorted({f for missing in lacking.values() for f in missing}, key=fields.index)
            listed = ", ".join(list(lacking)[:LISTED_CASES]) + (
                f" and {len(lacking) - LISTED_CASES} more" if len(lacking) > LISTED_CASES else ""
            )
            problems.append(
                f"{len(lacking)} of {len(cases)} case(s) lack {', '.join(which)} (the metric reads "
                f"{', '.join(fields)}): {listed}; calibrate judge refuses them unless --skip-incomplete"
            )
        mine = ratings[ratings["rater"] == name] if "rater" in ratings else ratings.iloc[:0]
        found.append(
            {
                "judge": name,
                "library": spec.library,
                "metric": spec.metric,
                "into": spec.into,
                "model": spec.model.name,
                "reads": list(fields),
                "ratings": len(mine),
                "cases_ready": len(cases) - len(lacking),
                "problems": problems,
                "ready": not problems,
            }
        )
    return found
