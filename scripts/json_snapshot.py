"""Run every analysis command with ``--json`` on the embedded demo and on a small synthetic campaign
(two annotators, three metrics, judge runs and repeats, slices) and keep each document, exit code and
error text in a folder, so two versions of calibrate can be compared byte for byte.

    python scripts/json_snapshot.py OUT_DIR                 # take a snapshot
    python scripts/json_snapshot.py OUT_DIR --against BASE  # take one and compare it with BASE

A refactoring that keeps behaviour leaves every file identical; the comparison lists those that are not.

The comparison ignores one thing: a ``schema_version`` key at the top level of a ``.json`` document
(every ``--json`` document carries one since issue 28; a snapshot taken before has none). The key is
taken out of both sides before they are compared, with the rest of the text as it was written, so a
``schema_version`` nested anywhere else, or any other difference, still counts.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

EXE = [sys.executable, "-m", "calibrate"]
DEMO = Path(__file__).resolve().parents[1] / "calibrate" / "demo" / "data"
N_BOOT = ["--n-boot", "200"]
CREATED = re.compile(r'"created": "[^"]*"')  # the one field that changes from run to run

SYNTHETIC_TOML = """name = "snapshot"

[metrics.faithfulness]
scale = "binary"
max_false_pass = 0.10

[metrics.helpfulness]
scale = "ordinal"
levels = [1, 2, 3, 4, 5]
human_pass = 4
cost_false_pass = 5
cost_false_fail = 1

[metrics.fluency]
scale = "continuous"
range = [0, 10]
human_pass = 6

[raters.good]
family = "gpt"
model = "gpt-x"

[raters.noisy]
family = "llama"
model = "llama-x"

[raters.levels]
family = "claude"
on_metric_scale = true

[juries.panel]
judges = ["good@v1", "noisy@repeat-1"]
combine = "mean"
"""


def synthetic_campaign(folder: Path) -> None:
    """120 cases; two annotators who overlap on 40, 20 cases not labelled; judges good (two runs), noisy
    (three repeats) and levels (on the ordinal scale); metadata topic and generator_family."""
    rng = np.random.default_rng(7)
    folder.mkdir(parents=True)
    (folder / "campaign.toml").write_text(SYNTHETIC_TOML)
    rows, cases = ["case_id,metric,rater,rater_kind,value,error,run_id"], []
    for i in range(120):
        case = f"c{i:03d}"
        cases.append(
            {
                "case_id": case,
                "input": f"question {i}",
                "actual_output": "x " * (i % 17 + 1),
                "retrieval_context": [f"passage {i}"],
                "metadata": {
                    "topic": ["billing", "shipping", "returns"][i % 3],
                    "generator_family": ["gpt", "mistral"][i % 2],
                },
            }
        )
        truth = {"faithfulness": rng.random(), "helpfulness": rng.random(), "fluency": rng.random()}
        human = {
            "faithfulness": int(truth["faithfulness"] > 0.35),
            "helpfulness": 1 + min(4, int(truth["helpfulness"] * 5)),
            "fluency": round(10 * truth["fluency"], 1),
        }
        annotators = [] if i >= 100 else ["ann-a"] if i >= 40 else ["ann-a", "ann-b"]
        for metric, value in human.items():
            for annotator in annotators:
                shown = value
                if annotator == "ann-b" and rng.random() < 0.2:
                    shown = {
                        "faithfulness": 1 - value,
                        "helpfulness": max(1, value - 1),
                        "fluency": round(max(0.0, value - 1.5), 1),
                    }[metric]
                rows.append(f"{case},{metric},{annotator},human,{shown},,")
            for run, shift in (("v1", 0.0), ("v2", 0.08)):
                score = float(np.clip(truth[metric] + rng.normal(shift, 0.12), 0, 1))
                rows.append(f"{case},{metric},good,judge,{score:.4f},,{run}")
            for repeat in (1, 2, 3):
                if i == 5 and repeat == 2:
                    rows.append(f"{case},{metric},noisy,judge,,timeout after 60 s,repeat-{repeat}")
                    continue
                score = float(np.clip(truth[metric] + rng.normal(0, 0.35), 0, 1))
                rows.append(f"{case},{metric},noisy,judge,{score:.4f},,repeat-{repeat}")
        rows.append(f"{case},helpfulness,levels,judge,{human['helpfulness'] if rng.random() < 0.8 else 3},,")
    (folder / "ratings.csv").write_text("\n".join(rows) + "\n")
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))


def commands(demo: Path, synthetic: Path, work: Path) -> dict[str, list[str]]:
    drop = ["--out-of-scale", "drop"]
    judge_demo = ["--judge", "Olz-gpt4o", "--judge", "TREMA-all"]
    return {
        "demo-validate": ["validate", str(demo), *drop],
        "demo-stats": ["stats", str(demo), *drop, *N_BOOT, "--json"],
        "demo-stats-by": ["stats", str(demo), *drop, *N_BOOT, "--by", "question_type", *judge_demo, "--json"],
        "demo-thresholds": ["thresholds", str(demo), *drop, *N_BOOT, "--json"],
        "demo-thresholds-cost": [
            "thresholds",
            str(demo),
            *drop,
            *N_BOOT,
            "--cost-false-pass",
            "4",
            "--cost-false-fail",
            "1",
            "--json",
        ],
        "demo-gate": ["gate", str(demo), *drop, *N_BOOT, "--min-kappa", "0.3", "--json"],
        "demo-audit": [
            "audit",
            str(demo),
            *drop,
            *N_BOOT,
            "--metric",
            "relevance",
            "--old",
            "Olz-gpt4o",
            "--new",
            "RMITIR-GPT4o",
            "--json",
        ],
        "demo-pass-rate": ["pass-rate", str(demo), *drop, "--metric", "relevance", "--judge", "Olz-gpt4o", "--json"],
        "demo-compare": ["compare", str(demo), *drop, "--json"],
        "demo-bias": ["bias", str(demo), *drop, "--metric", "relevance", "--json"],
        "demo-calibration": [
            "calibration",
            str(demo),
            *drop,
            "--metric",
            "relevance",
            "--judge",
            "TREMA-all",
            "--json",
        ],
        "demo-plan": ["plan", str(demo), *drop, "--judge", "Olz-gpt4o", "--json"],
        "demo-sample": [
            "sample",
            str(demo),
            *drop,
            "--n",
            "30",
            "--strategy",
            "neyman",
            "--metric",
            "relevance",
            "--judge",
            "Olz-gpt4o",
            "--include-labelled",
            "--json",
        ],
        "demo-repeatability": ["repeatability", str(demo), *drop, "--json"],
        "demo-report": [
            "report",
            str(demo),
            *drop,
            *N_BOOT,
            "--out",
            str(work / "demo-report"),
            "--audit",
            "Olz-gpt4o",
            "RMITIR-GPT4o",
        ],
        "syn-validate": ["validate", str(synthetic)],
        "syn-stats": ["stats", str(synthetic), *N_BOOT, "--by", "topic", "--json"],
        "syn-thresholds": ["thresholds", str(synthetic), *N_BOOT, "--json"],
        "syn-thresholds-confidence": [
            "thresholds",
            str(synthetic),
            *N_BOOT,
            "--metric",
            "faithfulness",
            "--max-false-pass",
            "0.2",
            "--confidence",
            "0.9",
            "--json",
        ],
        "syn-gate": ["gate", str(synthetic), *N_BOOT, "--min-spearman", "0.3", "--forbid-self-eval", "--json"],
        "syn-audit": [
            "audit",
            str(synthetic),
            *N_BOOT,
            "--metric",
            "faithfulness",
            "--old",
            "good@v1",
            "--new",
            "good@v2",
            "--json",
        ],
        "syn-pass-rate": [
            "pass-rate",
            str(synthetic),
            "--metric",
            "fluency",
            "--judge",
            "good@v1",
            "--by",
            "topic",
            "--json",
        ],
        "syn-compare": ["compare", str(synthetic), "--json"],
        "syn-bias": ["bias", str(synthetic), "--metric", "faithfulness", "--by", "topic", "--json"],
        "syn-calibration": ["calibration", str(synthetic), "--metric", "faithfulness", "--judge", "good@v1", "--json"],
        "syn-plan": ["plan", str(synthetic), "--metric", "faithfulness", "--judge", "good@v1", "--json"],
        "syn-sample": [
            "sample",
            str(synthetic),
            "--n",
            "20",
            "--strategy",
            "disagreement",
            "--metric",
            "faithfulness",
            "--json",
        ],
        "syn-repeatability": ["repeatability", str(synthetic), *N_BOOT, "--json"],
        "syn-adjudicate": ["adjudicate", str(synthetic), "--json"],
        "syn-report": [
            "report",
            str(synthetic),
            *N_BOOT,
            "--by",
            "topic",
            "--out",
            str(work / "syn-report"),
            "--audit",
            "good@v1",
            "good@v2",
        ],
    }


def snapshot(out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    work = out / "campaigns"
    demo, synthetic = work / "demo", work / "synthetic"
    shutil.copytree(DEMO, demo)
    synthetic_campaign(synthetic)
    # a sample writes a file with its time into the campaign, which changes the data hash: last
    runs = sorted(commands(demo, synthetic, work).items(), key=lambda item: item[0].endswith("-sample"))
    for name, args in runs:
        result = subprocess.run([*EXE, *args], capture_output=True, text=True, cwd=out)
        text = result.stdout if "--json" in args else ""
        report = work / f"{name.split('-')[0]}-report" / "report.json"
        if name.endswith("-report"):
            text = report.read_text() if report.exists() else ""
        text = CREATED.sub('"created": "TIME"', text.replace(str(out), "OUT"))
        (out / f"{name}.json").write_text(text)
        errors = result.stderr.replace(str(out), "OUT") if result.returncode else ""
        (out / f"{name}.exit").write_text(f"{result.returncode}\n{errors}")
        print(f"{name:28} exit {result.returncode}", flush=True)


def without_schema_version(text: str) -> str:
    """A document's text without its top-level ``schema_version`` (the rest byte for byte as written);
    any other text as it is.

    Examples
    --------
    >>> without_schema_version('{"schema_version": 1, "a": {"schema_version": 2}}')
    '{"a": {"schema_version": 2}}'
    """
    try:
        document = json.loads(text)
    except ValueError:
        return text
    if not isinstance(document, dict) or "schema_version" not in document:
        return text
    del document["schema_version"]
    rewritten = json.dumps(document, allow_nan=False)
    return rewritten + "\n" if text.endswith("\n") else rewritten


def same(a: Path, b: Path) -> bool:
    """Whether two snapshot files are the same, but for a top-level ``schema_version`` in a document."""
    if a.suffix != ".json":
        return filecmp.cmp(a, b, shallow=False)
    return without_schema_version(a.read_text()) == without_schema_version(b.read_text())


def compare(out: Path, base: Path) -> int:
    names = sorted(p.name for p in base.iterdir() if p.is_file())
    differ = [n for n in names if not (out / n).exists() or not same(out / n, base / n)]
    for name in differ:
        print(f"differs: {name}")
    print(f"{len(names) - len(differ)} of {len(names)} files identical")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--against", type=Path, help="a snapshot to compare with")
    args = parser.parse_args()
    snapshot(args.out.resolve())
    return compare(args.out.resolve(), args.against.resolve()) if args.against else 0


if __name__ == "__main__":
    sys.exit(main())
