"""Benchmark: `calibrate judge` against the scripted judge server with a simulated latency, beside
DeepEval's own `evaluate()` and RAGAS's own `evaluate()` on the same cases, server and concurrency, in
one run.

    python bench/bench_judges.py [--cases 500] [--latency 0.1] [--concurrency 32]

Prints, for DeepEval faithfulness and RAGAS faithfulness together (two judge models behind the one
endpoint), for two DeepEval judges of two models, and for each library alone, the achieved model-call
rate against the ideal (concurrency / latency) and the wall time, each library's own
`evaluate()` wall time, and the time and calls of an unchanged rerun. The server runs in its own
process, so it does not share the interpreter with the code measured; the libraries are imported
before any clock starts, for every contender alike.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from calibrate import load_campaign  # noqa: E402
from calibrate.judges.calls import CallPolicy  # noqa: E402
from calibrate.judges.runner import run_judges  # noqa: E402
from tests.conftest import write_campaign  # noqa: E402

CALLS_PER_CASE = {"deepeval": 4, "ragas": 2}  # faithfulness: truths, claims, verdicts, reason / statements, NLI
#: each library's judge model; the runs with two judges put two models behind the one endpoint
MODELS = {"deepeval": "llama-3-careful", "ragas": "qwen-careful"}


def make_cases(n: int) -> list[dict]:
    return [
        {
            "case_id": f"c{i:04d}",
            "input": f"question {i}?",
            "actual_output": f"Fact {i} is true." + ("" if i % 2 else f" Invented claim {i} is false."),
            "retrieval_context": [f"Fact {i} is true.", f"Other fact {i} holds."],
        }
        for i in range(n)
    ]


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "servers" / "judge_server.py"), str(latency)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    return process, process.stdout.readline().strip()


def deepeval_evaluate(cases: list[dict], url: str, concurrency: int) -> float:
    """DeepEval's own evaluate(), with its own LocalModel pointed at the same server."""
    from deepeval import evaluate
    from deepeval.evaluate.configs import AsyncConfig, CacheConfig, DisplayConfig
    from deepeval.metrics import FaithfulnessMetric
    from deepeval.models import LocalModel
    from deepeval.test_case import LLMTestCase

    model = LocalModel(model=MODELS["deepeval"], base_url=url, api_key="unused", temperature=0)
    test_cases = [
        LLMTestCase(input=c["input"], actual_output=c["actual_output"], retrieval_context=c["retrieval_context"])
        for c in cases
    ]
    start = time.perf_counter()
    evaluate(
        test_cases,
        [FaithfulnessMetric(model=model, async_mode=True)],
        async_config=AsyncConfig(max_concurrent=concurrency),
        display_config=DisplayConfig(show_indicator=False, print_results=False),
        cache_config=CacheConfig(write_cache=False, use_cache=False),
    )
    return time.perf_counter() - start


def ragas_evaluate(cases: list[dict], url: str, concurrency: int) -> float:
    """RAGAS's own evaluate() (its Faithfulness, the one evaluate() takes), with its own llm_factory
    on an AsyncOpenAI client pointed at the same server."""
    import importlib

    from openai import AsyncOpenAI
    from ragas import EvaluationDataset, evaluate
    from ragas.llms import llm_factory
    from ragas.run_config import RunConfig

    faithfulness = importlib.import_module("ragas.metrics._faithfulness").Faithfulness
    llm = llm_factory(MODELS["ragas"], client=AsyncOpenAI(base_url=url, api_key="unused"))
    dataset = EvaluationDataset.from_list(
        [
            {"user_input": c["input"], "response": c["actual_output"], "retrieved_contexts": c["retrieval_context"]}
            for c in cases
        ]
    )
    start = time.perf_counter()
    result = evaluate(
        dataset,
        metrics=[faithfulness(llm=llm)],
        show_progress=False,
        run_config=RunConfig(max_workers=concurrency, timeout=60),
    )
    seconds = time.perf_counter() - start
    assert result.to_pandas()["faithfulness"].notna().all()
    return seconds


def calibrate_run(folder: Path, judges: list[tuple[str, str]], url: str, args) -> tuple[float, int]:
    """One `calibrate judge` run of faithfulness judges (library, model), all on the one endpoint, on a
    fresh campaign."""
    config = 'name = "bench"\n[metrics.faithfulness]\nscale = "binary"\n' + "".join(
        f'[judges.{library}-{model}]\nlibrary = "{library}"\nmetric = "faithfulness"\n'
        f'model = {{ provider = "openai", name = "{model}", base_url = "{url}" }}\n'
        for library, model in judges
    )
    cases = make_cases(args.cases)
    humans = pd.DataFrame(
        {
            "case_id": [c["case_id"] for c in cases],
            "metric": "faithfulness",
            "rater": "ann",
            "rater_kind": "human",
            "value": 1,
        }
    )
    write_campaign(folder, config, humans, cases)
    policy = CallPolicy(concurrency=args.concurrency)
    start = time.perf_counter()
    doc = run_judges(load_campaign(folder), policy=policy)
    seconds = time.perf_counter() - start
    calls = sum(j["calls"] for j in doc["judges"])
    assert calls == args.cases * sum(CALLS_PER_CASE[library] for library, _ in judges), doc["judges"]
    assert not any(j["failed"] for j in doc["judges"])
    ideal = args.concurrency / args.latency
    models = " + ".join(f"{library} on {model}" for library, model in judges)
    print(
        f"calibrate judge, faithfulness, {models} (one endpoint): {args.cases} cases, {calls} calls in "
        f"{seconds:.2f} s = {calls / seconds:.0f} calls/s, {calls / seconds / ideal:.0%} of the ideal "
        f"{ideal:.0f} calls/s (concurrency {args.concurrency}, latency {args.latency * 1000:.0f} ms)"
    )
    return seconds, calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    cases = make_cases(args.cases)
    import deepeval.metrics  # noqa: F401  - imported before any clock starts, for every contender
    import openai.types.chat  # noqa: F401
    import ragas.metrics.collections  # noqa: F401

    server, url = start_server(args.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.chdir(tmp)  # DeepEval's evaluate() writes its run files into the working directory
            calibrate_run(Path(tmp) / "both", list(MODELS.items()), url, args)
            calibrate_run(
                Path(tmp) / "two-models", [("deepeval", MODELS["deepeval"]), ("deepeval", "gpt-4-lenient")], url, args
            )
            start = time.perf_counter()
            again = run_judges(load_campaign(Path(tmp) / "both"), policy=CallPolicy(concurrency=args.concurrency))
            print(
                f"unchanged rerun: {time.perf_counter() - start:.2f} s, {sum(j['calls'] for j in again['judges'])} "
                f"calls, {sum(j['from_cache'] for j in again['judges'])} ratings from the cache"
            )
            # calibrate first: DeepEval's evaluate() leaves its per-call clients to the garbage collector
            ours = {
                library: calibrate_run(Path(tmp) / library, [(library, MODELS[library])], url, args)
                for library in CALLS_PER_CASE
            }
            logging.getLogger("asyncio").setLevel(logging.CRITICAL)  # those clients' "Event loop is closed"
            for library, theirs in (("deepeval", deepeval_evaluate), ("ragas", ragas_evaluate)):
                seconds, calls = ours[library]
                their_seconds = theirs(cases, url, args.concurrency)
                name = {"deepeval": "DeepEval", "ragas": "RAGAS"}[library]
                print(
                    f"{name} evaluate(), same cases, server and concurrency: {their_seconds:.2f} s "
                    f"({calls / their_seconds:.0f} calls/s); calibrate judge / {name} evaluate() wall time: "
                    f"{seconds / their_seconds:.2f}"
                )
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
