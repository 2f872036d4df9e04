"""Benchmark: `calibrate stats` on a campaign with three annotators against the same campaign with one.

    python bench/bench_annotators.py [--cases 60] [--judges 5] [--n-boot 1000] [--repeat 3]
                                     [--env KEY=VALUE ...]

The campaign of issue 26's story: 60 cases, two binary metrics (faithfulness, answer relevancy), five
judges scoring each from 0 to 1 (as DeepEval does), three annotators who label every case, one of them
with planted disagreements (a fifth of her labels flipped) and a tenth of the labels missing. The
one-annotator campaign keeps the first annotator's labels only (no agreement to compute). Each is run
``--repeat`` times, alternately, after one warm-up run each; the script prints every run's wall and CPU
seconds (user + system of calibrate's process), the medians, and the three / one ratio of each (the
target: at most 2x). ``--env PYTHONPATH=/path/to/other/checkout`` times another version of calibrate.
On a machine other people use, compare CPU seconds: the load average is printed before each run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
from process_timing import environment, timed

TOML = """name = "team"

[metrics.faithfulness]
scale = "binary"
max_false_pass = 0.2

[metrics.answer_relevancy]
scale = "binary"
max_false_pass = 0.2
"""


def make_campaign(folder: Path, n_cases: int, n_judges: int, annotators: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    rows = ["case_id,metric,rater,rater_kind,value"]
    for metric in ("faithfulness", "answer_relevancy"):
        truth = rng.random(n_cases) < 0.55
        labels = {
            "ana": truth,
            "ben": truth ^ (rng.random(n_cases) < 0.08),
            "cleo": truth ^ (rng.random(n_cases) < 0.2),
        }
        missing = {name: rng.random(n_cases) < (0 if name == "ana" else 0.1) for name in labels}
        for j in range(n_judges):
            quality = 0.15 + 0.1 * j
            scores = np.clip(np.where(truth, 0.75, 0.35) + rng.normal(0, quality, n_cases), 0, 1)
            rows += [f"c{i:03d},{metric},judge{j},judge,{s:.3f}" for i, s in enumerate(scores)]
        for name in list(labels)[:annotators]:
            rows += [
                f"c{i:03d},{metric},{name},human,{int(v)}" for i, v in enumerate(labels[name]) if not missing[name][i]
            ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "campaign.toml").write_text(TOML)
    (folder / "ratings.csv").write_text("\n".join(rows) + "\n")


def timed_with_load(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    """Wall and CPU seconds of one run (:func:`process_timing.timed`), and the load average before it."""
    load = os.getloadavg()[0]
    return (*timed(args, env, cwd), load)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--judges", type=int, default=5)
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    env = environment(args.env)
    with tempfile.TemporaryDirectory() as tmp:
        folders = {}
        for count in (1, 3):
            folders[count] = Path(tmp) / f"annotators-{count}"
            make_campaign(folders[count], args.cases, args.judges, count)
        print(
            f"calibrate stats: {args.cases} cases, 2 metrics, {args.judges} judges, {args.n_boot} resamples "
            f"({os.cpu_count()} CPUs; extra env: {' '.join(args.env) or 'none'})"
        )
        command = {
            count: [sys.executable, "-m", "calibrate", "stats", str(folder), "--n-boot", str(args.n_boot)]
            for count, folder in folders.items()
        }
        for count in (1, 3):
            wall, cpu, load = timed_with_load(command[count], env, Path(tmp))
            print(f"  warm-up, {count} annotator(s): wall {wall:6.1f} s  cpu {cpu:6.1f} s  (load before {load:.1f})")
        runs: dict[int, list[tuple[float, float, float]]] = {1: [], 3: []}
        for i in range(args.repeat):
            for count in (1, 3):
                found = timed_with_load(command[count], env, Path(tmp))
                runs[count].append(found)
                print(
                    f"  {count} annotator(s), run {i + 1}: wall {found[0]:6.1f} s  cpu {found[1]:6.1f} s  "
                    f"(load before {found[2]:.1f})",
                    flush=True,
                )
    median = {
        c: (statistics.median(r[0] for r in found), statistics.median(r[1] for r in found)) for c, found in runs.items()
    }
    for count in (1, 3):
        print(f"  median, {count} annotator(s): wall {median[count][0]:.1f} s, cpu {median[count][1]:.1f} s")
    print(
        f"  three / one annotator: wall {median[3][0] / median[1][0]:.2f}x, cpu {median[3][1] / median[1][1]:.2f}x "
        "(target: at most 2x)"
    )


if __name__ == "__main__":
    main()
