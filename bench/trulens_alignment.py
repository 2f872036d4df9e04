"""TruLens's alignment report on a campaign's judge, as one process: what bench/bench_trulens.py times.

    .trulens-venv/bin/python bench/trulens_alignment.py CAMPAIGN [--judge judge0] [--top 3] [--human-pass 2]
    .trulens-venv/bin/python bench/trulens_alignment.py --arrays PAIRS.npz [--top 3] [--human-pass 2]

Runs in TruLens's virtual environment (``make trulens``) and imports nothing of calibrate. It reads the
campaign's ``ratings.parquet`` (the file ``calibrate stats`` reads) and pairs the judge's value with the
human one per case -- or, with ``--arrays``, takes the two arrays ``human`` and ``judge`` of a NumPy file
as they are (TruLens's own use: scores already in memory) -- puts both on [0, 1] (AlignmentReport refuses
anything else: a value over ``--top``) and runs
``AlignmentReport(judge, human, threshold=human_pass / top).print_summary()``, which prints the report on
standard output. On standard error, one line: ``phases: import X s, load Y s, report Z s`` (wall seconds).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("campaign", type=Path, nargs="?")
    parser.add_argument("--arrays", type=Path, help="a .npz file of two arrays, human and judge, instead")
    parser.add_argument("--judge", default="judge0")
    parser.add_argument("--top", type=float, default=3.0, help="the top of the metric's scale (its bottom is 0)")
    parser.add_argument("--human-pass", type=float, default=2.0, help="the metric's human_pass")
    args = parser.parse_args()

    if (args.campaign is None) == (args.arrays is None):
        parser.error("give one of a CAMPAIGN folder and --arrays")
    start = time.perf_counter()
    import numpy as np
    import pandas as pd
    from trulens.benchmark import AlignmentReport

    imported = time.perf_counter()
    if args.arrays is not None:
        with np.load(args.arrays) as arrays:
            human, judge = arrays["human"], arrays["judge"]
    else:
        ratings = pd.read_parquet(args.campaign / "ratings.parquet", columns=["case_id", "rater", "value"])
        pairs = pd.concat(
            {
                "human": ratings[ratings["rater"] == "human"].set_index("case_id")["value"],
                "judge": ratings[ratings["rater"] == args.judge].set_index("case_id")["value"],
            },
            axis=1,
            join="inner",
        ).dropna()
        human, judge = pairs["human"].to_numpy(), pairs["judge"].to_numpy()
    loaded = time.perf_counter()
    report = AlignmentReport(judge / args.top, human / args.top, threshold=args.human_pass / args.top)
    report.print_summary()
    done = time.perf_counter()
    print(
        f"phases: import {imported - start:.2f} s, load {loaded - imported:.2f} s, report {done - loaded:.2f} s",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
