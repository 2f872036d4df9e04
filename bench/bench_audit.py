"""Benchmark: `calibrate audit` of two judges over 100,000 labelled cases with 2,000 paired resamples
(the target: under 20 s on the project's 2-core machine). Prints wall and CPU time and peak memory.

    python bench/bench_audit.py [--cases 100000] [--n-boot 2000] [--repeat 3] [--continuous]

The two judges score on the metric's 0-3 scale; with ``--continuous`` they give full-precision scores
in [0, 1] instead (about one contingency cell per case, the engine's hardest case).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from process_timing import measure

TOML = """name = "bench-audit"
[metrics.relevance]
scale = "ordinal"
levels = [0, 1, 2, 3]
human_pass = 2
max_false_pass = 0.1
[raters.old]
on_metric_scale = true
[raters.new]
on_metric_scale = true
"""


def make_campaign(folder: Path, n_cases: int, continuous: bool, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    human = rng.choice(4, size=n_cases, p=[0.45, 0.28, 0.18, 0.09]).astype(float)
    ids = np.array([f"c{i:06d}" for i in range(n_cases)])
    frames = [
        pd.DataFrame({"case_id": ids, "metric": "relevance", "rater": "human", "rater_kind": "human", "value": human})
    ]
    for name, keep in (("old", 0.55), ("new", 0.6)):
        if continuous:
            values = np.clip(human / 3 * 0.6 + rng.normal(0.2, 0.25 - 0.1 * keep, n_cases), 0, 1)
        else:
            values = np.where(rng.random(n_cases) < keep, human, rng.integers(0, 4, n_cases)).astype(float)
        frames.append(
            pd.DataFrame({"case_id": ids, "metric": "relevance", "rater": name, "rater_kind": "judge", "value": values})
        )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "campaign.toml").write_text(
        TOML if not continuous else TOML.replace("on_metric_scale = true", "on_metric_scale = false")
    )
    pd.concat(frames, ignore_index=True).to_parquet(folder / "ratings.parquet", index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--n-boot", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--continuous", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "campaign"
        make_campaign(folder, args.cases, args.continuous)
        calibrate = Path(sys.executable).parent / "calibrate"
        audit = [str(calibrate), "audit", str(folder), "--metric", "relevance", "--old", "old", "--new", "new"]
        output = Path(tmp) / "stdout"
        # exit 1: the new judge is not at least as close to the humans, a decision like any other
        measured = [
            measure([*audit, "--n-boot", str(args.n_boot), "--json"], stdout=output, ok=(0, 1))
            for _ in range(args.repeat)
        ]
        runs = [m.wall for m in measured]
        cpu = [m.cpu for m in measured]  # what a shared, loaded machine does not inflate
        doc = json.loads(output.read_text())
        peak_mb = max(m.peak_mb for m in measured)
        kind = "continuous scores" if args.continuous else "0-3 scores"
        print(
            f"calibrate audit, {args.cases:,} cases, {kind}, {args.n_boot} paired resamples: median "
            f"{statistics.median(runs):.1f} s over {len(runs)} runs ({min(runs):.1f}-{max(runs):.1f} s), CPU "
            f"{statistics.median(cpu):.1f} s (load average {os.getloadavg()[0]:.1f}); peak memory {peak_mb:,.0f} MB"
        )
        print(f"decision: {doc['decision']['decision']} ({doc['decision']['reason']})")


if __name__ == "__main__":
    main()
