"""Benchmark: `calibrate stats` on 100,000 cases x 10 judges with 1,000 bootstrap resamples, against
the straightforward loop that calls scipy.stats.spearmanr and sklearn.metrics.cohen_kappa_score once
per resample, measured side by side in one run. Prints wall and CPU time, speed-up and peak memory.

    python bench/bench_stats.py [--sizes 100k] [--judges 10] [--n-boot 1000] [--naive-resamples 1000]
                                [--weighted] [--repeat 3]

`--sizes 10k,100k,1M --judges 1,10` prints one row per size x judges x output mode: the command's median
wall time, its CPU seconds and the peak memory of its process (the whole command: loading, statistics,
output). The straightforward loop is timed only with one size and one number of judges (unless
`--naive-resamples` is given).

Half of the judges score on the metric's 0-3 scale; the other half give continuous scores in [0, 1]
with full float precision (the hardest case for the table engine: about one cell per case).
`--naive-resamples` below `--n-boot` times the loop on fewer resamples and scales it linearly
(it says so in its output). `--weighted` records every case as drawn by a targeted sample design (a
fifth of the cases with probability 0.5, the rest 0.05), so the statistics take the weighted path.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from process_timing import measure
from scipy import stats
from sklearn.metrics import cohen_kappa_score

TOML = """name = "bench"
[metrics.relevance]
scale = "ordinal"
levels = [0, 1, 2, 3]
human_pass = 2
max_false_pass = 0.1
"""


def make_campaign(folder: Path, n_cases: int, n_judges: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.choice(4, size=n_cases, p=[0.45, 0.28, 0.18, 0.09]).astype(float)
    ids = np.array([f"c{i:06d}" for i in range(n_cases)])
    judges, toml = {}, TOML
    for j in range(n_judges):
        name = f"judge{j}"
        if j % 2 == 0:
            judges[name] = np.where(rng.random(n_cases) < 0.6, human, rng.integers(0, 4, n_cases)).astype(float)
            toml += f"[raters.{name}]\non_metric_scale = true\n"
        else:
            judges[name] = np.clip(human / 3 * 0.6 + rng.normal(0.2, 0.2, n_cases), 0, 1)
    frames = [
        pd.DataFrame({"case_id": ids, "metric": "relevance", "rater": "human", "rater_kind": "human", "value": human})
    ]
    frames += [
        pd.DataFrame({"case_id": ids, "metric": "relevance", "rater": name, "rater_kind": "judge", "value": values})
        for name, values in judges.items()
    ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "campaign.toml").write_text(toml)
    pd.concat(frames, ignore_index=True).to_parquet(folder / "ratings.parquet", index=False)
    return {"human": human, **judges}


def record_targeted_sample(folder: Path, n_cases: int, seed: int = 0) -> None:
    """samples/bench.csv: every case drawn, a fifth of them with probability 0.5, the rest with 0.05."""
    rng = np.random.default_rng([seed, 1])
    near = rng.random(n_cases) < 0.2
    (folder / "samples").mkdir(exist_ok=True)
    (folder / "samples" / "bench.json").write_text(f'{{"strategy": "threshold", "n": {n_cases}}}')
    pd.DataFrame(
        {
            "case_id": [f"c{i:06d}" for i in range(n_cases)],
            "stratum": np.where(near, "near", "far"),
            "inclusion_probability": np.where(near, 0.5, 0.05),
        }
    ).to_csv(folder / "samples" / "bench.csv", index=False)


def naive_loop(data: dict[str, np.ndarray], n_resamples: int, seed: int = 0) -> float:
    """Per judge, per resample: scipy's Spearman and scikit-learn's kappa (on the scale, or of pass/fail)."""
    human = data["human"]
    n = human.size
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    with warnings.catch_warnings(action="ignore"):
        for name, judge in data.items():
            if name == "human":
                continue
            on_scale = np.isin(judge, [0, 1, 2, 3]).all()
            for _ in range(n_resamples):
                idx = rng.integers(0, n, n)
                h, j = human[idx], judge[idx]
                stats.spearmanr(h, j)
                if on_scale:
                    cohen_kappa_score(h, j)
                else:
                    cohen_kappa_score(h >= 2, j >= 0.5)
    return time.perf_counter() - start


def parse_size(text: str) -> int:
    """A number of cases as written on the command line: 10000, 10k, 1M, 1.5m.

    >>> parse_size("10k"), parse_size("1M"), parse_size("250")
    (10000, 1000000, 250)
    """
    text = text.strip().lower().replace("_", "").replace(",", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def time_command(folder: Path, n_boot: int, extra: list[str], repeat: int, output: Path) -> dict[str, float]:
    """`calibrate stats CAMPAIGN [extra] > output`, as a user runs it, ``repeat`` times: the median wall
    and CPU seconds (user + system of the command's process), the range of wall times and the largest
    peak resident set of one run (MB)."""
    calibrate = Path(sys.executable).parent / "calibrate"
    measured = [
        measure([str(calibrate), "stats", str(folder), "--n-boot", str(n_boot), *extra], stdout=output)
        for _ in range(repeat)
    ]
    runs, cpu, peak = ([getattr(m, key) for m in measured] for key in ("wall", "cpu", "peak_mb"))
    return {
        "wall": statistics.median(runs),
        "low": min(runs),
        "high": max(runs),
        "cpu": statistics.median(cpu),
        "peak": max(peak),
        "load": os.getloadavg()[0],
        "mb": output.stat().st_size / 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100k", help="numbers of cases, comma separated (10k,100k,1M)")
    parser.add_argument("--cases", type=int, help="one number of cases (as --sizes with one size)")
    parser.add_argument("--judges", default="10", help="numbers of judges, comma separated (1,10)")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--naive-resamples", type=int, help="default 1000 with one size and one judge count, else 0")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each calibrate mode (median reported)")
    parser.add_argument("--weighted", action="store_true", help="cases from a targeted sample: weighted statistics")
    args = parser.parse_args()
    sizes = [args.cases] if args.cases else [parse_size(size) for size in args.sizes.split(",")]
    judge_counts = [int(j) for j in args.judges.split(",")]
    naive_resamples = args.naive_resamples
    if naive_resamples is None:
        naive_resamples = 1000 if len(sizes) == 1 and len(judge_counts) == 1 else 0
    weighted = ", weighted" if args.weighted else ""
    print(f"calibrate stats, {args.n_boot} resamples{weighted}: median of {args.repeat} runs per row")
    print(
        f"{'cases':>9} {'judges':>6} {'output':>6} {'MB':>6} | {'wall s':>7} {'(range)':>13} | {'CPU s':>6} | "
        f"{'peak MB':>7} | load"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for n_cases in sizes:
            for n_judges in judge_counts:
                folder = Path(tmp) / f"campaign-{n_cases}-{n_judges}"
                data = make_campaign(folder, n_cases, n_judges)
                if args.weighted:
                    record_targeted_sample(folder, n_cases)
                timings = {}
                for mode, extra in (("table", []), ("json", ["--json"])):
                    # CPU seconds (user + system of calibrate's process): what a shared, loaded machine does not
                    # inflate; the load average is read after the row's last run
                    t = time_command(folder, args.n_boot, extra, args.repeat, Path(tmp) / "stdout")
                    timings[mode] = t["wall"]
                    print(
                        f"{n_cases:>9,} {n_judges:>6} {mode:>6} {t['mb']:>6.1f} | {t['wall']:>7.1f} "
                        f"({t['low']:>5.1f}-{t['high']:>5.1f}) | {t['cpu']:>6.1f} | {t['peak']:>7,.0f} | "
                        f"{t['load']:.1f}",
                        flush=True,
                    )
                if naive_resamples:
                    naive_comparison(data, naive_resamples, args.n_boot, timings)
                shutil.rmtree(folder)


def naive_comparison(data: dict[str, np.ndarray], resamples: int, n_boot: int, timings: dict[str, float]) -> None:
    """The straightforward loop on ``resamples`` resamples (scaled to ``n_boot``) and calibrate's speed-up."""
    naive = naive_loop(data, resamples)
    scaled = naive * n_boot / resamples
    note = "" if resamples == n_boot else f" (measured on {resamples} resamples: {naive:.1f} s, scaled linearly)"
    print(f"straightforward loop, spearmanr + cohen_kappa_score per resample: {scaled:.1f} s{note}")
    for mode, seconds in timings.items():
        print(f"speed-up, {mode} output: {scaled / seconds:.1f}x")
    print(
        "(the loop computes 2 statistics per resample; calibrate computes every statistic, its BCa "
        "jackknife, the threshold rule per resample and, with --json, every curve point)"
    )


if __name__ == "__main__":
    main()
