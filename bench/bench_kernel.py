"""Benchmark: the bootstrap behind `calibrate stats` against its resampling floor, at 100k x 1, 100k x 10
and 1M x 1 (cases x judges) in one run.

    python bench/bench_kernel.py [--sizes 100k:1,100k:10,1M:1] [--n-boot 1000] [--floor-resamples 200]

The floor is what any bootstrap of the cases pays: per resample, numpy draws the case indices
(``default_rng([seed, r]).integers``, as :func:`calibrate.stats.bootstrap.resample_indices` does) and counts
them (``np.bincount``), on one thread. The bootstrap part is
:func:`calibrate.analysis.metric_comparisons.bootstrap_runs` on the metric's judge comparisons (draws,
counts, the rank and cell kernels, every statistic and the threshold rule per resample), the campaign
loaded and the comparisons built beforehand. Each is timed in CPU seconds (user + system of every thread
of this process: what a loaded machine does not inflate) and wall seconds; the kernels' own CPU seconds
are shown apart. Peak memory is this process's peak resident set during the bootstrap part, above what
it held before (the kernel's first compilation happens in a warm-up call, outside the figures).
`--floor-resamples` below `--n-boot` times the floor on fewer resamples and scales it linearly.
The campaigns are bench_stats.py's (half the judges on the 0-3 scale, half with full-precision scores).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_stats import make_campaign, parse_size

import calibrate
from calibrate.analysis.metric_comparisons import bootstrap_runs, judge_comparisons
from calibrate.analysis.rules import default_rule
from calibrate.stats import kernel


def resident_mb(field: str) -> float:
    """``VmRSS`` or ``VmHWM`` (the peak since the last reset) of this process, in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak() -> None:
    """Start ``VmHWM`` again from the current resident set (Linux: ``clear_refs`` 5)."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def floor(n_cases: int, n_resamples: int, seed: int = 0) -> tuple[float, float]:
    """CPU and wall seconds of drawing and counting ``n_resamples`` resamples of ``n_cases``, one thread."""
    cpu, wall = time.process_time(), time.perf_counter()
    for r in range(n_resamples):
        indices = np.random.default_rng([seed, r]).integers(0, n_cases, n_cases, dtype=np.int32)
        np.bincount(indices, minlength=n_cases)
    return time.process_time() - cpu, time.perf_counter() - wall


class KernelClock:
    """The CPU seconds spent in the rank and cell kernels while it is on (their module functions wrapped)."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.saved = {name: getattr(kernel, name) for name in ("rank_sums_many", "cell_tables")}

    def __enter__(self) -> KernelClock:
        for name, function in self.saved.items():
            setattr(kernel, name, self._timed(function))
        return self

    def __exit__(self, *exc) -> None:
        for name, function in self.saved.items():
            setattr(kernel, name, function)

    def _timed(self, function):
        def timed(*args, **kwargs):
            start = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.cpu += time.process_time() - start

        return timed


def bootstrap_part(folder: Path, n_boot: int) -> dict[str, float]:
    """CPU s, wall s, kernels' CPU s and peak MB of the bootstrap of a campaign's metric (loaded first)."""
    campaign = calibrate.load_campaign(folder)
    metric = campaign.metric_names(None)[0]
    rule = default_rule(campaign.metrics[metric])

    def run(resamples: int) -> None:
        compared = judge_comparisons(campaign, metric, None, rule)
        bootstrap_runs(compared.comparisons, compared.design, n_boot=resamples, seed=0, progress=None, label=metric)

    run(2)  # warm-up: the kernels' compilation (or cache load) is not part of the figures
    compared = judge_comparisons(campaign, metric, None, rule)
    before = resident_mb("VmRSS")
    reset_peak()
    with KernelClock() as clock:
        cpu, wall = time.process_time(), time.perf_counter()
        bootstrap_runs(compared.comparisons, compared.design, n_boot=n_boot, seed=0, progress=None, label=metric)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"cpu": cpu, "wall": wall, "kernels": clock.cpu, "peak": resident_mb("VmHWM") - before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100k:1,100k:10,1M:1", help="cases:judges, comma separated")
    parser.add_argument("--n-boot", type=int, default=1000)
    parser.add_argument("--floor-resamples", type=int, default=200)
    args = parser.parse_args()
    print(f"bootstrap part ({args.n_boot} resamples) against its floor (numpy draw + bincount, one thread)")
    print(
        f"{'cases':>9} {'judges':>6} | {'floor CPU s':>11} | {'bootstrap CPU s':>15} {'wall s':>7} "
        f"{'x floor':>7} | {'kernels CPU s':>13} | {'peak MB':>7} | load"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for item in args.sizes.split(","):
            size, _, judges = item.partition(":")
            n_cases, n_judges = parse_size(size), int(judges or 1)
            folder = Path(tmp) / f"c{n_cases}x{n_judges}"
            make_campaign(folder, n_cases, n_judges)
            floor_resamples = min(args.floor_resamples, args.n_boot)
            floor_cpu, _ = floor(n_cases, floor_resamples)
            floor_cpu *= args.n_boot / floor_resamples
            part = bootstrap_part(folder, args.n_boot)
            print(
                f"{n_cases:>9,} {n_judges:>6} | {floor_cpu:>11.1f} | {part['cpu']:>15.1f} {part['wall']:>7.1f} "
                f"{part['cpu'] / floor_cpu:>7.1f} | {part['kernels']:>13.1f} | {part['peak']:>7,.0f} | "
                f"{os.getloadavg()[0]:.1f}",
                flush=True,
            )
    if args.floor_resamples < args.n_boot:
        print(f"(the floor measured on {args.floor_resamples} resamples, scaled linearly)")


if __name__ == "__main__":
    main()
