"""Benchmark: `calibrate import deepeval` of a 100,000-case DeepEval test run, the first import and the
same file imported again unchanged, each as its own process. Prints wall and CPU seconds (user + system,
from os.wait4), peak memory (the process's maximum resident set) and the load average, and the ratio of
the re-import to the first.

    python bench/bench_import.py [--cases 100000] [--repeats 1] [--changed] [--keep DIR]

The file is made in a temporary folder (or DIR, kept): each test case has a name of its own, an input,
an output, an expected output, two retrieved contexts and two metrics scored by one judge model (one in
fifty failed, with DeepEval's error), as DeepEval saves a test run. The campaign is `calibrate init`'s, of both metrics.
A re-import of an unchanged file is recognised by the file's content hash and the campaign's state,
recorded with the import, and does nothing (issue 29's goal: at most 0.2 of the first import).
``--changed`` then changes one score and imports again: a full import, which loads the campaign once
(it loaded it three times before, and took 1.9 times the first import).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from process_timing import measure


def make_run(path: Path, n_cases: int, *, changed: bool = False) -> None:
    """A DeepEval test run of ``n_cases`` single-turn test cases, two metrics each, written to ``path``;
    ``changed``: the same but for one score (a re-import of it is a full import of one new revision)."""
    cases = []
    for i in range(n_cases):
        failed = i % 50 == 0
        metrics = [
            {
                "name": "Faithfulness",
                "score": None if failed else round((i * 7919 % 1000) / 1000, 3),
                "threshold": 0.7,
                "success": None if failed else (i * 7919 % 1000) >= 700,
                "reason": None if failed else f"The answer follows from context {i % 2}.",
                "strictMode": False,
                "evaluationModel": "gpt-4o",
                "error": "rate limited" if failed else None,
            },
            {
                "name": "Answer Relevancy",
                "score": 0.123 if changed and i == 1 else round((i * 104729 % 1000) / 1000, 3),
                "threshold": 0.5,
                "success": (i * 104729 % 1000) >= 500,
                "reason": "It answers the question.",
                "strictMode": False,
                "evaluationModel": "gpt-4o",
                "error": None,
            },
        ]
        cases.append(
            {
                "name": f"question-{i:06d}",
                "input": f"What does policy {i} say about refunds after {i % 30} days?",
                "actualOutput": f"Policy {i} allows a refund within {i % 30} days of purchase.",
                "expectedOutput": f"A refund within {i % 30} days.",
                "retrievalContext": [f"Policy {i}: refunds are allowed within {i % 30} days.", "Receipts are needed."],
                "context": None,
                "metadata": None,
                "metricsData": metrics,
            }
        )
    path.write_text(json.dumps({"testRunId": "bench", "testCases": cases, "conversationalTestCases": []}))


def run_measured(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, float | str]:
    """One run of ``args`` (:func:`process_timing.measure`): wall and CPU seconds, peak resident MB, the load
    average before it, and what it printed."""
    output = cwd / "stdout"
    run = measure(args, stdout=output, env=env, cwd=cwd)
    return {"wall": run.wall, "cpu": run.cpu, "peak_mb": run.peak_mb, "load": run.load, "output": output.read_text()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=1, help="re-imports of the unchanged file to time")
    parser.add_argument("--keep", type=Path, help="make the file and campaign here, and keep them")
    parser.add_argument(
        "--changed",
        action="store_true",
        help="also time a re-import of the file with one score changed (a full import)",
    )
    options = parser.parse_args()
    base = options.keep or Path(tempfile.mkdtemp(prefix="bench-import-"))
    base.mkdir(parents=True, exist_ok=True)
    run_file, campaign = base / "test_run_bench.json", base / "campaign"
    started = time.perf_counter()
    make_run(run_file, options.cases)
    env = {**os.environ, "DEEPEVAL_TELEMETRY_OPT_OUT": "1"}
    # run from the temporary folder: `python -m` puts the working directory first on the path
    calibrate = [sys.executable, "-m", "calibrate"]
    metrics = ["--metric", "faithfulness", "--metric", "answer_relevancy"]
    subprocess.run([*calibrate, "init", str(campaign), *metrics], env=env, cwd=base, check=True, capture_output=True)
    print(
        f"{options.cases} test cases, {run_file.stat().st_size / 1e6:.0f} MB, made in {time.perf_counter() - started:.1f} s"
    )
    args = [*calibrate, "import", "deepeval", str(campaign), str(run_file)]
    first = run_measured(args, env, base)
    again = [run_measured(args, env, base) for _ in range(options.repeats)]
    rows = [("first import", first)] + [(f"re-import {i + 1} (unchanged)", r) for i, r in enumerate(again)]
    if options.changed:
        make_run(run_file, options.cases, changed=True)
        rows.append(("re-import, one score changed", run_measured(args, env, base)))
    print(f"{'':28} {'wall s':>8} {'CPU s':>8} {'peak MB':>8} {'load':>6}")
    for name, r in rows:
        print(f"{name:28} {r['wall']:8.2f} {r['cpu']:8.2f} {r['peak_mb']:8.0f} {r['load']:6.2f}")
    best = min(again, key=lambda r: r["cpu"])
    print(
        f"re-import / first: wall {best['wall'] / first['wall']:.3f}, CPU {best['cpu'] / first['cpu']:.3f} "
        f"(goal: at most 0.2)"
    )
    print("re-import said: " + best["output"].strip().splitlines()[0])
    if options.changed:
        changed = rows[-1][1]
        print(
            f"changed re-import / first: wall {changed['wall'] / first['wall']:.3f}, CPU {changed['cpu'] / first['cpu']:.3f}"
        )
    if not options.keep:
        import shutil

        shutil.rmtree(base)


if __name__ == "__main__":
    main()
