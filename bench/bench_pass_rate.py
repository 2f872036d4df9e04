"""Benchmark: `calibrate pass-rate` on 10 million judge-scored cases and 2,000 human labels. Prints wall
and CPU time (os.wait4's rusage of the command's process), its peak memory and the load average; then,
from one more run with the campaign loading instrumented, the split between `load_campaign` and the rest
(the join, the threshold, the estimates and the output).

    python bench/bench_pass_rate.py [--cases 10000000] [--labels 2000] [--repeat 3] [--weighted] [--json]
                                    [--cprofile]

The campaign (a temporary folder, built first and not timed): `ratings.parquet` with one judge's
continuous score in [0, 1] on every case (0.1% of its calls failed: no value and an error) and a binary
human label on `--labels` of them. The labels are a random sample of the cases; with `--weighted` they are
a targeted sample recorded as `samples/bench.csv` and `.json` (half of them drawn among the cases scored
near the judge's threshold, half among the rest), so the estimates take the weighted path. The split run
clears the process's peak resident memory (``/proc/self/clear_refs``) once the campaign is loaded, so the
peak it prints for the rest is the rest's own; `--cprofile` also profiles that run and prints the rest's
heaviest functions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from process_timing import measure

TOML = """name = "bench"
[metrics.relevance]
scale = "binary"
human_pass = 1
max_false_pass = 0.1
"""

#: The instrumented run: the command line's own entry point, with load_campaign wrapped to record the
#: CPU seconds and resident memory at its end (and the peak cleared there: the rest's peak is its own).
SPLIT = r"""
import cProfile, json, os, pstats, resource, sys, time
import calibrate.campaign as cc
from calibrate.cli import main

marks, profile = {}, cProfile.Profile() if os.environ.get("BENCH_CPROFILE") else None
def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime
def status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
original = cc.load_campaign
def load_campaign(*args, **kwargs):
    start = cpu(); wall = time.perf_counter()
    campaign = original(*args, **kwargs)
    marks.update(load_cpu=cpu() - start, load_wall=time.perf_counter() - wall, load_peak_mb=status("VmHWM"),
                 rest_start_mb=status("VmRSS"), rest_cpu0=cpu(), rest_wall0=time.perf_counter())
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    if profile is not None:
        profile.enable()
    return campaign
cc.load_campaign = load_campaign
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    if profile is not None:
        profile.disable()
    marks.update(rest_cpu=cpu() - marks.pop("rest_cpu0"), rest_wall=time.perf_counter() - marks.pop("rest_wall0"),
                 rest_peak_mb=status("VmHWM"))
    with open(os.environ["BENCH_MARKS"], "w") as f:
        json.dump(marks, f)
    if profile is not None:
        with open(os.environ["BENCH_MARKS"] + ".txt", "w") as f:
            pstats.Stats(profile, stream=f).sort_stats("cumulative").print_stats(25)
"""


def make_campaign(folder: Path, n_cases: int, n_labels: int, *, weighted: bool, seed: int = 0) -> float:
    """Write the campaign; return the true human pass rate over all cases."""
    rng = np.random.default_rng(seed)
    quality = rng.random(n_cases)
    human = (rng.random(n_cases) < quality).astype(float)  # a case of quality q passes with probability q
    score = np.clip(quality + rng.normal(0, 0.15, n_cases), 0, 1)
    failed = rng.random(n_cases) < 0.001
    ids = pd.Series(np.arange(n_cases)).map("c{:08d}".format).to_numpy()
    near = (score > 0.4) & (score < 0.6)
    if weighted:  # half of the labels near the judge's threshold, half among the rest
        groups = {"near": np.flatnonzero(near), "far": np.flatnonzero(~near)}
        take = {"near": n_labels // 2, "far": n_labels - n_labels // 2}
        drawn = {k: rng.choice(v, size=take[k], replace=False) for k, v in groups.items()}
        labelled = np.concatenate(list(drawn.values()))
        (folder / "samples").mkdir(parents=True)
        design = {
            "strategy": "threshold",
            "created": "2025-01-01T00:00:00Z",
            "n": n_labels,
            "seed": seed,
            "strata": {
                k: {"size": int(groups[k].size), "sampled": take[k], "inclusion_probability": take[k] / groups[k].size}
                for k in groups
            },
        }
        (folder / "samples" / "bench.json").write_text(json.dumps(design))
        pd.DataFrame(
            {
                "case_id": ids[labelled],
                "stratum": np.repeat(list(drawn), [take[k] for k in drawn]),
                "inclusion_probability": np.repeat(
                    [design["strata"][k]["inclusion_probability"] for k in drawn], [take[k] for k in drawn]
                ),
            }
        ).to_csv(folder / "samples" / "bench.csv", index=False)
    else:
        labelled = rng.choice(n_cases, size=n_labels, replace=False)
    judge = pd.DataFrame(
        {
            "case_id": ids,
            "metric": "relevance",
            "rater": "judge",
            "rater_kind": "judge",
            "value": np.where(failed, np.nan, score),
            "error": np.where(failed, "timeout", None),
        }
    )
    humans = pd.DataFrame(
        {
            "case_id": ids[labelled],
            "metric": "relevance",
            "rater": "annotator",
            "rater_kind": "human",
            "value": human[labelled],
            "error": np.full(labelled.size, None, dtype=object),
        }
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "campaign.toml").write_text(TOML)
    pd.concat([humans, judge], ignore_index=True).to_parquet(folder / "ratings.parquet", index=False)
    return float(human.mean())


def run(args: list[str], env: dict[str, str], output: Path) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak resident MB of one run, stdout to ``output``
    (:func:`process_timing.measure`)."""
    measured = measure(args, stdout=output, env=env)
    return measured.wall, measured.cpu, measured.peak_mb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000_000)
    parser.add_argument("--labels", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs (median reported)")
    parser.add_argument("--weighted", action="store_true", help="labels from a targeted sample design")
    parser.add_argument("--json", action="store_true", help="time `--json` output instead of the table")
    parser.add_argument("--cprofile", action="store_true", help="profile the rest of the split run too")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "campaign"
        start = time.perf_counter()
        truth = make_campaign(folder, args.cases, args.labels, weighted=args.weighted)
        print(
            f"campaign built in {time.perf_counter() - start:.0f} s: {args.cases:,} judge-scored cases, "
            f"{args.labels:,} human labels{' (targeted sample design)' if args.weighted else ''}; "
            f"true pass rate {truth:.4f}"
        )
        command = ["pass-rate", str(folder), "--metric", "relevance", "--judge", "judge"]
        command += ["--json"] if args.json else []
        env = dict(os.environ)
        output = Path(tmp) / "stdout"
        walls, cpus, peaks = [], [], []
        for _ in range(args.repeat):
            load = os.getloadavg()[0]
            wall, cpu, peak = run([sys.executable, "-m", "calibrate", *command], env, output)
            walls.append(wall), cpus.append(cpu), peaks.append(peak)
        # CPU seconds: what a shared, loaded machine does not inflate
        print(
            f"calibrate pass-rate: median wall {statistics.median(walls):.1f} s over {len(walls)} runs "
            f"({min(walls):.1f}-{max(walls):.1f} s), CPU {statistics.median(cpus):.1f} s, "
            f"peak memory {max(peaks):,.0f} MB (load average before the last run {load:.2f})"
        )
        marks = Path(tmp) / "marks.json"
        env |= {"BENCH_MARKS": str(marks)} | ({"BENCH_CPROFILE": "1"} if args.cprofile else {})
        load = os.getloadavg()[0]
        wall, cpu, peak = run([sys.executable, "-c", SPLIT, *command], env, output)
        m = json.loads(marks.read_text())
        print(
            f"split (one run, wall {wall:.1f} s, CPU {cpu:.1f} s, load average {load:.2f}):\n"
            f"  load_campaign: CPU {m['load_cpu']:.1f} s, wall {m['load_wall']:.1f} s, peak {m['load_peak_mb']:,.0f} MB\n"
            f"  the rest:      CPU {m['rest_cpu']:.1f} s, wall {m['rest_wall']:.1f} s, peak {m['rest_peak_mb']:,.0f} MB "
            f"(+{m['rest_peak_mb'] - m['rest_start_mb']:,.0f} MB over the {m['rest_start_mb']:,.0f} MB "
            "resident after loading)" + (" [profiled: slower]" if args.cprofile else "")
        )
        if args.cprofile:
            print(Path(str(marks) + ".txt").read_text())


if __name__ == "__main__":
    main()
