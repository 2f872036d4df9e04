"""Benchmark: the demo on an idle machine and beside a busy neighbour, in wall and CPU seconds.

    python bench/bench_busy.py [--what demo|stats] [--repeat 3] [--neighbours 2]
                               [--env KEY=VALUE ...] [--label NAME]

Runs ``calibrate demo`` (or the demo's ``calibrate stats --by question_type``, the part with the
slices) once to warm up (the first run compiles the statistics kernels), then ``--repeat`` times
idle and ``--repeat`` times beside ``--neighbours`` CPU-bound processes (``python -c 'while True:
pass'``), alternately, and prints each run's wall time and CPU time (user + system, of calibrate's
process) with the medians and the busy / idle ratios. A neighbour is started one second before its
run and stopped after it.

``--env`` runs calibrate with extra environment settings, e.g. ``--env NUMBA_THREADING_LAYER=omp
--env GOMP_SPINCOUNT=300000`` for numba's OpenMP layer with GNU OpenMP's default spinning (how
calibrate ran before it chose its threading layer), or ``--env PYTHONPATH=/path/to/other/checkout``.
On a machine other people use, the idle runs are not idle: the load average is printed before each
run, and CPU seconds (which a loaded machine should not inflate) are the figure to compare.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from process_timing import environment, timed

NEIGHBOUR = [sys.executable, "-c", "while True: pass"]


def command(what: str, out_dir: Path) -> list[str]:
    calibrate = [sys.executable, "-m", "calibrate"]
    if what == "demo":
        return [*calibrate, "demo", "--out", str(out_dir)]
    from calibrate.demo import DEMO_OUT_OF_SCALE, DEMO_SLICE_KEY, demo_campaign_path

    return [*calibrate, "stats", str(demo_campaign_path()), "--by", DEMO_SLICE_KEY, "--out-of-scale", DEMO_OUT_OF_SCALE]


def run(args: list[str], env: dict[str, str], cwd: Path, neighbours: int) -> tuple[float, float, float]:
    """One run, beside ``neighbours`` busy processes; also the 1-minute load average before it."""
    busy = [subprocess.Popen(NEIGHBOUR) for _ in range(neighbours)]
    try:
        if busy:
            time.sleep(1.0)
        load = os.getloadavg()[0]
        wall, cpu = timed(args, env, cwd)
    finally:
        for process in busy:
            process.kill()
            process.wait()
    return wall, cpu, load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--what", choices=["demo", "stats"], default="demo")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--neighbours", type=int, default=2)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--label", default="calibrate")
    args = parser.parse_args()
    env = environment(args.env)
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        argv = command(args.what, cwd / "out")
        print(f"{args.label}: {' '.join(argv[2:])} ({os.cpu_count()} CPUs; extra env: {' '.join(args.env) or 'none'})")
        warm = run(argv, env, cwd, 0)
        print(f"  warm-up      wall {warm[0]:6.1f} s  cpu {warm[1]:6.1f} s  (load before {warm[2]:.1f})")
        results: dict[str, list[tuple[float, float, float]]] = {"idle": [], "busy": []}
        for i in range(args.repeat):
            for condition, neighbours in (("idle", 0), ("busy", args.neighbours)):
                found = run(argv, env, cwd, neighbours)
                results[condition].append(found)
                print(
                    f"  {condition} {i + 1:<6}  wall {found[0]:6.1f} s  cpu {found[1]:6.1f} s  "
                    f"(load before {found[2]:.1f})",
                    flush=True,
                )
    median = {
        c: (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)) for c, runs in results.items()
    }
    print(
        f"  median idle: wall {median['idle'][0]:.1f} s, cpu {median['idle'][1]:.1f} s; "
        f"beside {args.neighbours} busy neighbour(s): wall {median['busy'][0]:.1f} s, cpu {median['busy'][1]:.1f} s"
    )
    print(
        f"  busy / idle: wall {median['busy'][0] / median['idle'][0]:.2f}x, "
        f"cpu {median['busy'][1] / median['idle'][1]:.2f}x"
    )


if __name__ == "__main__":
    main()
