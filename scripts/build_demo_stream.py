"""Build the embedded stream demo (calibrate/demo/stream/) from the embedded demo campaign: the same TREC DL
2023 cases, labels and nine judges, given times, with a planted drift.

Usage: python scripts/build_demo_stream.py

- 1,000 random cases are the **baseline**, labelled when the threshold was chosen: they keep every
  label, and no time.
- The other 3,423 cases are **production** from 2026-09-07 to 2026-11-29 (``metadata.time``): every judge
  scored them, and a uniform random quarter of them was audited by the assessors (the ``audit`` sample,
  with its inclusion probability); the rest lose their human label.
- **The planted drift**: from 2026-11-02 the traffic shifts towards queries on which RMITIR-llama70B
  passes what the assessors fail. Nine in ten of production's cases that this judge scores 3 and the
  assessors fail are placed after that date, with enough other cases that the judge's false-pass rate
  there is about 0.3 (about 0.01 before it, against the campaign's ceiling of 0.10).

The same seed gives the same files; the data is the demo's (MIT license, LICENSE copied beside it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "calibrate" / "demo" / "data"
OUT = ROOT / "calibrate" / "demo" / "stream"
SEED = 2026
BASELINE = 1000
AUDIT = 0.25
DRIFTING_JUDGE = "RMITIR-llama70B"
START, DRIFT, END = (pd.Timestamp(t, tz="UTC") for t in ("2026-09-07", "2026-11-02", "2026-11-30"))
LATE_FALSE_PASS_RATE = 0.3


def main() -> None:
    rng = np.random.default_rng(SEED)
    ratings = pd.read_parquet(SOURCE / "ratings.parquet")
    cases = [json.loads(line) for line in (SOURCE / "cases.jsonl").read_text().splitlines() if line.strip()]
    ids = np.array([c["case_id"] for c in cases])
    human = ratings[ratings["rater_kind"] == "human"].set_index("case_id")["value"]
    judge = ratings[ratings["rater"] == DRIFTING_JUDGE].set_index("case_id")["value"]
    order = rng.permutation(ids.size)
    baseline, production = set(ids[order[:BASELINE]]), ids[order[BASELINE:]]
    fails = np.array([human.get(c, 0) < 2 for c in production])
    false_pass = fails & np.array([judge.get(c, 0) >= 3 for c in production])
    # the late segment: nine in ten false passes, other fails to make its false-pass rate about 0.3, and
    # passes in the share they have overall
    fp = production[false_pass]
    late_fp = set(rng.choice(fp, size=int(round(0.9 * fp.size)), replace=False))
    other_fails = production[fails & ~false_pass]
    late_fails = set(
        rng.choice(other_fails, size=int(round(len(late_fp) * (1 / LATE_FALSE_PASS_RATE - 1))), replace=False)
    )
    passes = production[~fails]
    pass_share = passes.size / production.size
    n_late_passes = int(round((len(late_fp) + len(late_fails)) * pass_share / (1 - pass_share)))
    late = late_fp | late_fails | set(rng.choice(passes, size=n_late_passes, replace=False))
    early = [c for c in production if c not in late]
    late = [c for c in production if c in late]

    def spread(members: list[str], begin: pd.Timestamp, end: pd.Timestamp) -> dict[str, str]:
        seconds = np.sort(rng.uniform(0, (end - begin).total_seconds(), len(members)))
        shuffled = rng.permutation(members)
        return {
            c: (begin + pd.Timedelta(seconds=float(s))).strftime("%Y-%m-%dT%H:%M:%SZ")
            for c, s in zip(shuffled, seconds)
        }

    times = spread(early, START, DRIFT) | spread(late, DRIFT, END)
    audited = set(rng.choice(production, size=int(round(AUDIT * production.size)), replace=False))
    keep = ratings["rater_kind"].eq("judge") | ratings["case_id"].isin(baseline | audited)
    OUT.mkdir(parents=True, exist_ok=True)
    ratings[keep].reset_index(drop=True).to_parquet(OUT / "ratings.parquet", index=False)
    with (OUT / "cases.jsonl").open("w") as handle:
        for case in cases:
            if case["case_id"] in times:
                case = {**case, "metadata": {**case.get("metadata", {}), "time": times[case["case_id"]]}}
            handle.write(json.dumps(case) + "\n")
    toml = (
        (SOURCE / "campaign.toml")
        .read_text()
        .replace('name = "trec-dl-2023-llmjudge"', 'name = "trec-dl-2023-stream"')
        .replace(
            'description = "TREC DL 2023 passage relevance',
            'description = "A stream of TREC DL 2023 passage relevance, '
            "with a planted drift from 2026-11-02 (scripts/build_demo_stream.py):",
        )
    )
    (OUT / "campaign.toml").write_text(toml)
    samples = OUT / "samples"
    samples.mkdir(exist_ok=True)
    probability = len(audited) / production.size
    pd.DataFrame({"case_id": sorted(audited), "stratum": "all", "inclusion_probability": probability}).to_csv(
        samples / "audit.csv", index=False
    )
    design = {
        "strategy": "random",
        "n": len(audited),
        "seed": SEED,
        "pool": "production (cases with a time)",
        "strata": {
            "all": {"size": int(production.size), "sampled": len(audited), "inclusion_probability": probability}
        },
        "created": "2026-09-07T00:00:00+00:00",
    }
    (samples / "audit.json").write_text(json.dumps(design, indent=2) + "\n")
    for name in ("LICENSE", "SOURCE.md"):
        shutil.copyfile(SOURCE / name, OUT / name)
    late_fails_all = sum(1 for c in late if human.get(c, 0) < 2)
    print(
        f"baseline {BASELINE}, production {production.size} ({len(early)} before the drift, {len(late)} after), "
        f"audited {len(audited)}; {DRIFTING_JUDGE} false passes: {len(late_fp)} of {late_fails_all} fails after the "
        f"drift, {fp.size - len(late_fp)} of {int(fails.sum()) - late_fails_all} before"
    )


if __name__ == "__main__":
    main()
