"""Benchmark: `calibrate monitor` on a stream of 1,000,000 timed cases, 5% of them audited by humans, as a
user runs it (the real CLI in a subprocess). Prints wall and CPU time (user + system of the process), peak
memory and the load average.

    python bench/bench_monitor.py [--cases 1000000] [--audited 0.05] [--baseline 2000] [--drift]
                                  [--continuous] [--repeat 1] [--json] [--split | --profile]

The campaign is built in a temporary folder: ``--baseline`` labelled cases without a time (the labels the
threshold is chosen on) and ``--cases`` production cases, one a minute, each with a ``metadata.time``; a
uniform random ``--audited`` share of them keeps its human label (the monitor takes them as a uniform
audit). One judge scores every case on the metric's 0-3 scale (``--continuous``: a score in [0, 1] with
full float precision). ``--drift`` plants a change halfway: the judge agrees with humans 20% of the time
instead of 70% (its false-pass rate goes from about 0.15 to 0.4, past the ceiling of 0.2), so the
false-pass watch alarms and restarts, again and again.

The run's CPU time covers loading the campaign (``cases.jsonl`` of ``--cases`` lines) and the monitor
itself; ``--split`` also loads the campaign and runs ``monitor_judge`` in this process, timed apart
(``--profile``: under cProfile, with its listing).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from process_timing import measure

TOML = """name = "bench-monitor"
[metrics.relevance]
scale = "ordinal"
levels = [0, 1, 2, 3]
human_pass = 2
max_false_pass = 0.2

[raters.human]

[raters.judge]
on_metric_scale = {on_scale}
"""
START = pd.Timestamp("2026-01-01", tz="UTC")


def make_campaign(
    folder: Path, n_cases: int, audited: float, n_baseline: int, *, drift: bool, continuous: bool, seed: int = 0
) -> dict[str, int]:
    """campaign.toml, cases.jsonl (the stream's cases timed, the baseline's not) and ratings.parquet."""
    rng = np.random.default_rng(seed)
    n = n_baseline + n_cases
    human = rng.choice(4, size=n, p=[0.4, 0.25, 0.2, 0.15]).astype(float)
    agree = np.full(n, 0.7)
    if drift:  # from halfway through the stream the judge agrees with humans far less often
        agree[n_baseline + n_cases // 2 :] = 0.2
    judge = np.where(rng.random(n) < agree, human, rng.integers(0, 4, n)).astype(float)
    if continuous:
        judge = np.clip(judge / 3 + rng.normal(0, 0.1, n), 0, 1)
    ids = np.array([f"c{i:07d}" for i in range(n)])
    stream = np.arange(n) >= n_baseline
    labelled = ~stream | (rng.random(n) < audited)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "campaign.toml").write_text(TOML.format(on_scale="false" if continuous else "true"))
    times = (START + pd.to_timedelta(np.arange(n_cases), unit="min")).strftime("%Y-%m-%dT%H:%M:%SZ")
    with (folder / "cases.jsonl").open("w") as out:
        for case_id in ids[:n_baseline]:
            out.write(json.dumps({"case_id": case_id, "input": "q"}) + "\n")
        for case_id, when in zip(ids[n_baseline:], times):
            out.write(json.dumps({"case_id": case_id, "input": "q", "metadata": {"time": when}}) + "\n")
    ratings = pd.concat(
        [
            pd.DataFrame(
                {
                    "case_id": ids[labelled],
                    "metric": "relevance",
                    "rater": "human",
                    "rater_kind": "human",
                    "value": human[labelled],
                }
            ),
            pd.DataFrame(
                {"case_id": ids, "metric": "relevance", "rater": "judge", "rater_kind": "judge", "value": judge}
            ),
        ],
        ignore_index=True,
    )
    ratings.to_parquet(folder / "ratings.parquet", index=False)
    return {"stream": n_cases, "audited": int((labelled & stream).sum()), "baseline": n_baseline}


def run(folder: Path, as_json: bool) -> tuple[float, float, float, int, str]:
    """Wall and CPU seconds, peak memory (MB), exit code and stdout of one `calibrate monitor` on ``folder``
    (:func:`process_timing.measure`), as a user runs it: `calibrate monitor CAMPAIGN ... > file`."""
    args = [sys.executable, "-m", "calibrate", "monitor", str(folder), "--metric", "relevance", "--judge", "judge"]
    output = folder.parent / "stdout"
    # 1 is an alarm (or a judge not better than chance): a run like any other
    run = measure(args + (["--json"] if as_json else []), stdout=output, cwd=folder.parent, ok=(0, 1))
    return run.wall, run.cpu, run.peak_mb, run.code, output.read_text()


def split(folder: Path, *, profiled: bool) -> None:
    """Load the campaign and run monitor_judge in this process, each timed in CPU seconds of this process;
    ``profiled``: monitor_judge under cProfile (its time then includes the profiler's), with its listing."""
    import cProfile
    import pstats

    import calibrate
    from calibrate.review.monitor import monitor_judge

    before = time.process_time()
    campaign = calibrate.load_campaign(folder)
    loaded = time.process_time()
    profiler = cProfile.Profile()
    if profiled:
        profiler.enable()
    monitor_judge(campaign, metric="relevance", judge="judge")
    if profiled:
        profiler.disable()
    done = time.process_time()
    print(
        f"in this process: loading the campaign {loaded - before:.1f} s of CPU, monitor_judge {done - loaded:.1f} s"
        f"{' (under cProfile)' if profiled else ''}"
    )
    if profiled:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1_000_000, help="timed production cases (the stream)")
    parser.add_argument("--audited", type=float, default=0.05, help="the share of the stream humans label")
    parser.add_argument("--baseline", type=int, default=2000, help="labelled cases without a time")
    parser.add_argument("--drift", action="store_true", help="plant a change halfway: alarms and restarts")
    parser.add_argument("--continuous", action="store_true", help="judge scores in [0, 1], not on the scale")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="time `calibrate monitor --json`")
    parser.add_argument("--split", action="store_true", help="also time loading and monitor_judge apart")
    parser.add_argument("--profile", action="store_true", help="--split, with monitor_judge under cProfile")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "campaign"
        start = time.perf_counter()
        sizes = make_campaign(
            folder, args.cases, args.audited, args.baseline, drift=args.drift, continuous=args.continuous
        )
        print(
            f"campaign: {sizes['stream']:,} timed cases, {sizes['audited']:,} audited, {sizes['baseline']:,} "
            f"baseline labels{', a drift halfway' if args.drift else ''} (built in {time.perf_counter() - start:.0f} s)"
        )
        for _ in range(args.repeat):
            load = os.getloadavg()[0]
            wall, cpu, peak, code, stdout = run(folder, args.json)
            # CPU seconds (user + system of calibrate's process): what a shared, loaded machine does not inflate
            print(
                f"calibrate monitor{' --json' if args.json else ''}: {wall:.1f} s wall, CPU {cpu:.1f} s, "
                f"peak memory {peak:,.0f} MB, exit {code} (load average before the run {load:.1f})"
            )
        print("\n".join(stdout.strip().splitlines()[-8:]) if not args.json else f"{len(stdout) / 1e6:.1f} MB of JSON")
        if args.split or args.profile:
            split(folder, profiled=args.profile)


if __name__ == "__main__":
    main()
