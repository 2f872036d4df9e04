"""Benchmark: `calibrate judge` against the scripted judge server with a simulated latency, beside
DeepEval's own `evaluate()` on the same cases, server and concurrency, in one run.

    python bench/bench_judges.py [--cases 500] [--latency 0.1] [--concurrency 32]

Prints the achieved model-call rate against the ideal (concurrency / latency), both wall times, and
the time and calls of an unchanged rerun. The server runs in its own process, so it does not share
the interpreter with the code measured. (RAGAS is not part of `calibrate judge` yet.)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from calibrate import load_campaign  # noqa: E402
from calibrate.judges.calls import CallPolicy  # noqa: E402
from calibrate.judges.runner import run_judges  # noqa: E402
from tests.conftest import write_campaign  # noqa: E402

CALLS_PER_CASE = 4


def make_cases(n: int) -> list[dict]:
    return [{"case_id": f"c{i:04d}", "input": f"question {i}?",
             "actual_output": f"Fact {i} is true." + ("" if i % 2 else f" Invented claim {i} is false."),
             "retrieval_context": [f"Fact {i} is true.", f"Other fact {i} holds."]} for i in range(n)]


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, str(ROOT / "tests" / "judge_server.py"), str(latency)],
                               stdout=subprocess.PIPE, text=True, cwd=ROOT)
    return process, process.stdout.readline().strip()


def deepeval_evaluate(cases: list[dict], url: str, concurrency: int) -> float:
    """DeepEval's own evaluate(), with its own LocalModel pointed at the same server."""
    from deepeval import evaluate
    from deepeval.evaluate.configs import AsyncConfig, CacheConfig, DisplayConfig
    from deepeval.metrics import FaithfulnessMetric
    from deepeval.models import LocalModel
    from deepeval.test_case import LLMTestCase

    model = LocalModel(model="scripted", base_url=url, api_key="unused", temperature=0)
    test_cases = [LLMTestCase(input=c["input"], actual_output=c["actual_output"],
                              retrieval_context=c["retrieval_context"]) for c in cases]
    start = time.perf_counter()
    evaluate(test_cases, [FaithfulnessMetric(model=model, async_mode=True)],
             async_config=AsyncConfig(max_concurrent=concurrency),
             display_config=DisplayConfig(show_indicator=False, print_results=False),
             cache_config=CacheConfig(write_cache=False, use_cache=False))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    cases = make_cases(args.cases)
    server, url = start_server(args.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(tmp)  # DeepEval's evaluate() writes its run files into the working directory
            config = (f'name = "bench"\n[metrics.faithfulness]\nscale = "binary"\n[judges.de-faith]\n'
                      f'library = "deepeval"\nmetric = "faithfulness"\n'
                      f'model = {{ provider = "openai", name = "scripted", base_url = "{url}" }}\n')
            humans = pd.DataFrame({"case_id": [c["case_id"] for c in cases], "metric": "faithfulness",
                                   "rater": "ann", "rater_kind": "human", "value": 1})
            folder = write_campaign(Path(tmp) / "campaign", config, humans, cases)
            policy = CallPolicy(concurrency=args.concurrency)
            start = time.perf_counter()
            doc = run_judges(load_campaign(folder), policy=policy)
            ours = time.perf_counter() - start
            calls = doc["judges"][0]["calls"]
            ideal = args.concurrency / args.latency
            print(f"calibrate judge: {args.cases} cases, {calls} calls in {ours:.2f} s = {calls / ours:.0f} "
                  f"calls/s, {calls / ours / ideal:.0%} of the ideal {ideal:.0f} calls/s "
                  f"(concurrency {args.concurrency}, latency {args.latency * 1000:.0f} ms); "
                  f"{doc['judges'][0]['failed']} failed")
            start = time.perf_counter()
            again = run_judges(load_campaign(folder), policy=policy)
            print(f"unchanged rerun: {time.perf_counter() - start:.2f} s, {again['judges'][0]['calls']} calls, "
                  f"{again['judges'][0]['from_cache']} from the cache")
            theirs = deepeval_evaluate(cases, url, args.concurrency)
            print(f"DeepEval evaluate(), same cases, server and concurrency: {theirs:.2f} s "
                  f"({args.cases * CALLS_PER_CASE / theirs:.0f} calls/s)")
            print(f"calibrate judge / DeepEval evaluate() wall time: {ours / theirs:.2f}")
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
