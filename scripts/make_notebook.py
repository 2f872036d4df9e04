"""Write notebooks/threshold_selection.ipynb (cells kept here as plain Python, so diffs stay readable)."""

from pathlib import Path

import nbformat

CELLS = [
    (
        "markdown",
        """# Choosing a pass threshold for an LLM judge

This notebook walks through the threshold-selection story on the embedded demo campaign: TREC DL 2023
passage relevance, labelled 0-3 by NIST assessors and by nine LLM-judge runs of three model families.
A human label of 2 or more is a *pass*. The question: which judge can we trust, and at which threshold?""",
    ),
    (
        "code",
        """import calibrate

campaign = calibrate.load_campaign(calibrate.demo_campaign_path())
print(campaign.name, "-", len(campaign.ratings), "ratings of", len(campaign.cases), "cases")
for a in campaign.adjustments:
    print("dropped out-of-scale value:", a.rater, a.case_id, a.value)""",
    ),
    (
        "markdown",
        """## How close is each judge to the humans?

`compute_stats` returns the document `calibrate stats --json` prints; `.to_frame()` makes it a tidy
table: one row per metric, judge, slice and statistic, with its estimate, its 95% interval, the method
that produced it and the number of cases. The bootstrap resamples are the same for every judge.""",
    ),
    (
        "code",
        """import pandas as pd

doc = calibrate.compute_stats(campaign, n_boot=500, seed=0, by="question_type")
metric = doc["metrics"][0]
table = doc.to_frame()
table.head()""",
    ),
    (
        "code",
        """# one row per judge: the main statistics side by side, sorted by Spearman's rho
whole = table[table["slice"].isna() & table["judge"].notna()]
agreement = (whole[whole["statistic"].isin(["spearman", "kappa", "kappa_quadratic", "alpha", "auc"])]
             .pivot(index="judge", columns="statistic", values="estimate")
             .sort_values("spearman", ascending=False).reset_index())
agreement""",
    ),
    (
        "code",
        """best = agreement.iloc[0]["judge"]
assert agreement["spearman"].between(-1, 1).all()
print("closest to the humans by Spearman rho:", best)
print(metric["judges"][0]["spearman"]["ci_method"])""",
    ),
    (
        "markdown",
        """## False passes and false fails at every threshold

A false pass is a case humans failed that the judge passes. The curve lists both error rates at each
distinct judge score, with Wilson score intervals.""",
    ),
    (
        "code",
        """curve = pd.DataFrame(next(j for j in metric["judges"] if j["judge"] == best)["curve"])
curve[["threshold", "false_pass_rate", "false_fail_rate", "n_false_pass", "n_false_fail"]]""",
    ),
    (
        "markdown",
        """## A recommended threshold, two ways

First a ceiling of 10% on the false-pass rate, then the conservative variant where the 95% upper bound
must stay under the ceiling, then costs (a false pass costs five false fails).""",
    ),
    (
        "code",
        """rules = {
    "max 10% false passes": calibrate.Rule("constraint", max_false_pass=0.10),
    "max 10%, 95% confident": calibrate.Rule("constraint", max_false_pass=0.10, confidence=0.95),
    "cost 5:1": calibrate.Rule("cost", cost_false_pass=5, cost_false_fail=1),
}
table = []
for name, rule in rules.items():
    recs = calibrate.recommend_thresholds(campaign, metric="relevance", rule=rule, n_boot=500)["recommendations"]
    for rec in recs:
        table.append({"rule": name, "judge": rec["judge"], "threshold": rec["threshold"],
                      "threshold CI": rec.get("threshold_ci"), "false-pass rate": rec["false_pass_rate"],
                      "false-fail rate": rec["false_fail_rate"], "warnings": len(rec["warnings"])})
recommendations = pd.DataFrame(table)
recommendations[recommendations["judge"] == best]""",
    ),
    (
        "markdown",
        """Some judges cannot meet the ceiling at any threshold short of failing everything; the
recommendation says so instead of returning a threshold that fails every case:""",
    ),
    (
        "code",
        """for rec in calibrate.recommend_thresholds(campaign, metric="relevance", rule=rules["max 10% false passes"],
                                        n_boot=200)["recommendations"]:
    if rec["threshold"] is None:
        print(rec["judge"], "->", rec["warnings"][0])""",
    ),
    (
        "markdown",
        """## Slices: look beyond the mean

The same statistics per question type show where a judge is weaker.""",
    ),
    (
        "code",
        """pd.DataFrame([{"question type": s["value"], "cases": s["n_cases"], "judge": j["judge"],
               "spearman": j["spearman"]["estimate"]}
              for s in metric["slices"] for j in s["judges"] if j["judge"] == best])""",
    ),
    ("markdown", "## The report for reviewers"),
    (
        "code",
        """import tempfile
from calibrate.analysis.rules import default_rule

out = tempfile.mkdtemp()
recs = calibrate.recommend_thresholds(campaign, metric="relevance",
                                      rule=default_rule(campaign.metrics["relevance"]), n_boot=500)["recommendations"]
paths = calibrate.write_report(calibrate.ReportDocuments(doc, recs, cases=campaign.cases), out)
print({kind: str(path) for kind, path in paths.items()})""",
    ),
]


def main() -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell(src) if kind == "markdown" else nbformat.v4.new_code_cell(src)
        for kind, src in CELLS
    ]
    path = Path(__file__).resolve().parents[1] / "notebooks" / "threshold_selection.ipynb"
    nbformat.write(nb, path)
    print("wrote", path)


if __name__ == "__main__":
    main()
