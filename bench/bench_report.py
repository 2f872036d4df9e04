"""Benchmark: `calibrate report` against `calibrate stats` on a campaign the size of a public preference
data set: 885 cases, 8 binary metrics, 14 judge runs (verdicts on 0/1 and continuous scores mixed),
one human label per case and metric. Prints both wall times (median of --repeats runs of the command
line), their ratio and the size of report.html.

    python bench/bench_report.py [--cases 885] [--metrics 8] [--judges 14] [--repeats 3] [--n-boot 1000]
                                 [--text-chars 0]

``--text-chars N`` gives each case an input, an answer and a retrieved context of about N characters
each (LLMBar's instructions and outputs run to thousands), the texts the worst-miss tables show.

The target of issue 14: the report within 1.5x the time of stats, and report.html under 1.5 MB.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

CALIBRATE = [sys.executable, "-m", "calibrate"]


def make_campaign(
    folder: Path, n_cases: int, n_metrics: int, n_judges: int, seed: int = 0, text_chars: int = 0
) -> Path:
    rng = np.random.default_rng(seed)
    ids = [f"c{i:04d}" for i in range(n_cases)]
    toml = ['name = "bench-report"']
    rows = []
    for m in range(n_metrics):
        metric = f"metric{m}"
        toml.append(f'[metrics.{metric}]\nscale = "binary"\nmax_false_pass = 0.1')
        human = (rng.random(n_cases) < 0.4 + 0.03 * m).astype(float)
        rows += [(c, metric, "human", "human", v) for c, v in zip(ids, human)]
        for j in range(n_judges):
            skill = 0.55 + 0.03 * j
            if j % 2 == 0:  # a verdict
                value = np.where(rng.random(n_cases) < skill, human, 1 - human)
            else:  # a continuous score
                value = np.clip(human * skill + rng.normal(0.25, 0.2, n_cases), 0, 1).round(4)
            rows += [(c, metric, f"judge{j:02d}", "judge", v) for c, v in zip(ids, value)]
    for j in range(n_judges):
        toml.append(f'[raters.judge{j:02d}]\nfamily = "{["gpt", "llama", "claude"][j % 3]}"')
    folder.mkdir(parents=True)
    (folder / "campaign.toml").write_text("\n\n".join(toml) + "\n")
    pd.DataFrame(rows, columns=["case_id", "metric", "rater", "rater_kind", "value"]).to_csv(
        folder / "ratings.csv", index=False
    )
    words = ["the", "answer", "model", "question", "because", "which", "context", "paris", "river", "claim"]

    def text(kind: str, i: int) -> str:
        if not text_chars:
            return f"{kind} {i}" + ("?" if kind == "question" else ".")
        return f"{kind} {i}: " + " ".join(rng.choice(words, size=text_chars // 6))

    with (folder / "cases.jsonl").open("w") as handle:
        for i, c in enumerate(ids):
            handle.write(
                json.dumps(
                    {
                        "case_id": c,
                        "input": text("question", i),
                        "actual_output": text("answer", i),
                        "retrieval_context": [text("context", i)],
                        "metadata": {"topic": f"t{i % 5}"},
                    }
                )
                + "\n"
            )
    return folder


def timed(args: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(CALIBRATE + args, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=885)
    parser.add_argument("--metrics", type=int, default=8)
    parser.add_argument("--judges", type=int, default=14)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--text-chars", type=int, default=0)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_campaign(
            Path(tmp) / "campaign", options.cases, options.metrics, options.judges, text_chars=options.text_chars
        )
        boot = ["--n-boot", str(options.n_boot)]
        stats_s = timed(["stats", str(folder), *boot], options.repeats)
        report_s = timed(["report", str(folder), "--out", str(Path(tmp) / "report"), *boot], options.repeats)
        size = (Path(tmp) / "report" / "report.html").stat().st_size
    print(
        f"campaign: {options.cases} cases x {options.metrics} binary metrics x {options.judges} judges, "
        f"{options.n_boot} resamples; median of {options.repeats} runs of the command line"
    )
    print(f"calibrate stats:  {stats_s:6.1f} s")
    print(f"calibrate report: {report_s:6.1f} s  ({report_s / stats_s:.2f}x stats; target at most 1.5x)")
    print(f"report.html:      {size / 1e6:6.2f} MB (target under 1.5 MB)")


if __name__ == "__main__":
    main()
