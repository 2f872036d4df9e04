"""Benchmark, the peer comparison: TruLens's alignment report against `calibrate stats` on one campaign of
100,000 cases x 1 judge, each a whole process, side by side. Prints wall, CPU and peak memory and the ratios.

    python bench/bench_trulens.py [--cases 100000] [--repeat 3] [--warmup 1] [--n-boot N]
                                  [--trulens-venv .trulens-venv]

TruLens runs in its own virtual environment (``make trulens``: scripts/install-trulens.sh, trulens-benchmark
2.16.0); without it this says how to install it and exits with 2. The data is bench_stats.py's
``make_campaign``: a metric on the ordinal scale 0-3 (a case passes at 2), one human label per case and one
judge on the same scale that agrees with it on 60% of the cases and guesses uniformly on the rest. Four
processes, each run ``--repeat`` times, in turn (the order rotates every round), after ``--warmup``
untimed rounds (the first run of each reads its libraries from disk, calibrate's compiles its kernels):

* TruLens, ``ratings.parquet``: bench/trulens_alignment.py in TruLens's environment reads the campaign's
  ``ratings.parquet`` (the file calibrate reads), pairs the judge with the human per case and runs
  ``trulens.benchmark.AlignmentReport(judge / 3, human / 3, threshold=2 / 3).print_summary()``.
* TruLens, arrays: the same on the two arrays from a ``.npz`` file (TruLens's own use, scores already in
  memory: the least a TruLens process does).
* ``calibrate stats CAMPAIGN``: every statistic with its interval (the default ``--n-boot``, or ``--n-boot``).
* ``calibrate stats CAMPAIGN --n-boot 0``: the same statistics, no interval.

What each computes. ``AlignmentReport`` (trulens.benchmark.alignment_report; each metric is a method of
trulens.feedback.groundtruth.GroundTruthAggregator, a pydantic model built anew per metric with the labels as
a list) takes scores on [0, 1] and gives point estimates only, no interval: MAE, Spearman's rho (scipy),
Kendall's tau-b (scipy), Cohen's kappa of pass/fail at the threshold (scikit-learn), the Brier score (a
Python loop), the AUC of the judge's score for the human's pass (scikit-learn); the confusion matrix at the
threshold; 10-bin calibration and score-distribution tables; the 10 worst misses; MAE, means and Spearman's
rho in three buckets of the human label. It chooses no threshold. ``calibrate stats`` reads and validates
the campaign (campaign.toml, the long table of ratings), joins the judge with the human reference and
gives Spearman's rho, Kendall's tau, Cohen's kappa on the 0-3 scale, quadratic-weighted kappa,
Krippendorff's alpha and the AUC; the human pass rate (Wilson interval); the threshold of the metric's
rule (most lenient with a false-pass rate at most 0.1) with the false-pass / false-fail curve, the pass
kappa, accuracy and balanced accuracy there; the bottom decile's pass rate; the worst misses; and with
``--n-boot`` > 0 a BCa bootstrap interval (resamples of cases, with its jackknife) for every figure.
Figures both compute, printed at the end as a check that both saw the same data: Spearman's rho and the AUC.

Wall seconds, CPU seconds (user + system, ``os.wait4``) and peak resident memory (``ru_maxrss`` of that
process) of each run; medians over the rounds, the ratios calibrate / TruLens (the goal of issue 29:
at most 1.0x) and the 1-minute load average before each run (on a shared machine, CPU seconds are the
figure a busy neighbour inflates least). calibrate runs as ``python -m calibrate`` from a temporary folder
with this process's environment, so ``PYTHONPATH`` picks the checkout; TruLens without ``PYTHONPATH``,
with OpenTelemetry's SDK disabled and ``DO_NOT_TRACK=1``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import process_timing
from bench_stats import make_campaign

from calibrate.stats import N_BOOT

HERE = Path(__file__).resolve().parent
CHILD = HERE / "trulens_alignment.py"
TRULENS_ENV = {"OTEL_SDK_DISABLED": "true", "DO_NOT_TRACK": "1"}


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    peak_mb: float
    load: float
    stderr: str


@dataclass(frozen=True)
class Command:
    label: str
    args: list[str]
    env: dict[str, str]
    trulens: bool


def trulens_python(venv: Path) -> Path:
    """The Python of TruLens's environment, or exit 2 saying how to install it."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import trulens.benchmark"]
    if python.exists() and subprocess.run(probe, capture_output=True, env=trulens_env()).returncode == 0:
        return python
    print(
        f"TruLens's virtual environment {venv} is missing or cannot import trulens.benchmark: install it "
        "with `make trulens` (scripts/install-trulens.sh; for another folder, TRULENS_VENV=FOLDER make trulens "
        "and --trulens-venv FOLDER)",
        file=sys.stderr,
    )
    raise SystemExit(2)


def trulens_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return {**env, **TRULENS_ENV}


def commands(python: Path, folder: Path, arrays: Path, n_boot: int | None) -> list[Command]:
    calibrate = [sys.executable, "-m", "calibrate", "stats", str(folder)]
    every = [] if n_boot is None else ["--n-boot", str(n_boot)]
    label = f"calibrate stats (default n-boot, {N_BOOT})" if n_boot is None else f"calibrate stats --n-boot {n_boot}"
    trulens = [str(python), str(CHILD)]
    return [
        Command("TruLens AlignmentReport, ratings.parquet", [*trulens, str(folder)], trulens_env(), True),
        Command("TruLens AlignmentReport, arrays", [*trulens, "--arrays", str(arrays)], trulens_env(), True),
        Command(label, [*calibrate, *every], dict(os.environ), False),
        Command("calibrate stats --n-boot 0", [*calibrate, "--n-boot", "0"], dict(os.environ), False),
    ]


def run(command: Command, cwd: Path, out: Path) -> Run:
    """One whole process: its standard output to ``out`` (as a user runs ``... > file``), timed
    (:func:`process_timing.measure`)."""
    measured = process_timing.measure(command.args, stdout=out, env=command.env, cwd=cwd)
    return Run(measured.wall, measured.cpu, measured.peak_mb, measured.load, measured.stderr)


def measure(cmds: list[Command], cwd: Path, repeat: int, warmup: int) -> dict[str, list[Run]]:
    """Every command ``warmup`` times untimed, then ``repeat`` rounds, the order rotated by one each round."""
    runs: dict[str, list[Run]] = {command.label: [] for command in cmds}
    for turn in range(warmup + repeat):
        order = cmds[turn % len(cmds) :] + cmds[: turn % len(cmds)]
        for command in order:
            result = run(command, cwd, cwd / f"{cmds.index(command)}.out")
            if turn >= warmup:
                runs[command.label].append(result)
                print(
                    f"  round {turn - warmup + 1}: {command.label}: {result.wall:.1f} s wall, {result.cpu:.1f} s CPU, "
                    f"{result.peak_mb:,.0f} MB (load {result.load:.2f})",
                    flush=True,
                )
    return runs


def phases(runs: list[Run]) -> str:
    """The median of each phase that trulens_alignment.py reports on standard error."""
    found: dict[str, list[float]] = {}
    for result in runs:
        for name, seconds in re.findall(r"(\w+) ([0-9.]+) s", result.stderr.split("phases:")[-1]):
            found.setdefault(name, []).append(float(seconds))
    return ", ".join(f"{name} {statistics.median(values):.2f} s" for name, values in found.items())


def report(cmds: list[Command], runs: dict[str, list[Run]]) -> None:
    width = max(len(command.label) for command in cmds)
    print(f"\n{'median of ' + str(len(runs[cmds[0].label])) + ' runs':<{width}}  wall s   CPU s  peak MB")
    medians = {}
    for command in cmds:
        rows = runs[command.label]
        medians[command.label] = [
            statistics.median(getattr(r, field) for r in rows) for field in ("wall", "cpu", "peak_mb")
        ]
        wall, cpu, peak = medians[command.label]
        print(f"{command.label:<{width}}  {wall:6.1f}  {cpu:6.1f}  {peak:7,.0f}")
        if command.trulens:
            print(f"{'':<{width}}  phases (wall): {phases(rows)}")
    pairs = [(ours, theirs) for ours in cmds if not ours.trulens for theirs in cmds if theirs.trulens]
    labels = [f"{ours.label} / {theirs.label.removeprefix('TruLens AlignmentReport, ')}" for ours, theirs in pairs]
    width = max(len(label) for label in labels)
    print(f"\n{'ratio calibrate / TruLens (goal: at most 1.0x)':<{width}}    wall     CPU    peak")
    for label, (ours, theirs) in zip(labels, pairs, strict=True):
        ratios = [a / b for a, b in zip(medians[ours.label], medians[theirs.label], strict=True)]
        print(f"{label:<{width}}  {ratios[0]:5.2f}x  {ratios[1]:5.2f}x  {ratios[2]:5.2f}x")
    loads = [r.load for rows in runs.values() for r in rows]
    print(
        f"load average (1 min) before the timed runs: median {statistics.median(loads):.2f}, "
        f"{min(loads):.2f}-{max(loads):.2f}; now {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs"
    )


def same_data(cwd: Path, cmds: list[Command]) -> str:
    """Spearman's rho and the AUC as each printed them (the last run's output)."""
    trulens = (cwd / f"{next(i for i, c in enumerate(cmds) if c.trulens)}.out").read_text()
    ours = (cwd / f"{next(i for i, c in enumerate(cmds) if not c.trulens)}.out").read_text()
    theirs = [re.search(rf"{name}\s+([-0-9.]+)", trulens) for name in ("Spearman correlation", "AUC")]
    row = re.search(r"judge0\s+[\d,]+\s+([-0-9.]+)\s+[-0-9.]+\s+([-0-9.]+)", ours)
    if row is None or None in theirs:
        return "same data: could not read Spearman's rho and the AUC from both outputs"
    return (
        f"same data: Spearman's rho TruLens {theirs[0].group(1)}, calibrate {row.group(1)}; "
        f"AUC TruLens {theirs[1].group(1)}, calibrate {row.group(2)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (medians reported)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    parser.add_argument("--n-boot", type=int, default=None, help="calibrate's resamples (default: its own default)")
    default_venv = os.environ.get("TRULENS_VENV", str(HERE.parent / ".trulens-venv"))
    parser.add_argument("--trulens-venv", type=Path, default=Path(default_venv))
    args = parser.parse_args()
    python = trulens_python(args.trulens_venv)

    with tempfile.TemporaryDirectory() as tmp:
        folder, arrays = Path(tmp) / "campaign", Path(tmp) / "pairs.npz"
        data = make_campaign(folder, args.cases, 1)
        np.savez(arrays, human=data["human"], judge=data["judge0"])
        cmds = commands(python, folder, arrays, args.n_boot)
        print(f"{args.cases:,} cases x 1 judge; {args.warmup} untimed round(s), then {args.repeat} timed", flush=True)
        runs = measure(cmds, Path(tmp), args.repeat, args.warmup)
        report(cmds, runs)
        print(same_data(Path(tmp), cmds))


if __name__ == "__main__":
    main()
