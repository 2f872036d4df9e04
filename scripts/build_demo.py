"""Build the embedded demo campaign from the LLMJudge (TREC DL 2023) data.

Usage: python scripts/build_demo.py PATH/TO/llmjudge

Writes calibrate/demo/data/: campaign.toml, ratings.parquet, cases.jsonl, LICENSE and SOURCE.md.
The data is MIT-licensed (LICENSE is copied beside it). Values are kept exactly as published,
including RMITIR-llama70B's two out-of-scale labels (5 on a 0-3 scale).
"""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

import pandas as pd

JUDGES = [
    "Olz-gpt4o",
    "RMITIR-GPT4o",
    "willia-umbrela1",
    "h2oloo-fewself",
    "RMITIR-llama70B",
    "NISTRetrieval-instruct0",
    "h2oloo-zeroshot1",
    "TREMA-all",
    "TREMA-other",
]
QUESTION_WORDS = {"what", "how", "who", "why", "where", "when", "which"}
OUT = Path(__file__).resolve().parents[1] / "calibrate" / "demo" / "data"


def read_qrels(path: Path) -> pd.DataFrame:
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return pd.DataFrame([(f"{q}-{p}", int(label)) for q, _, p, label in rows], columns=["case_id", "value"])


def main(source: Path) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    queries = dict(line.split("\t", 1) for line in (source / "queries.tsv").read_text().splitlines() if line)
    human = read_qrels(source / "human_qrels.txt").assign(rater="nist-assessor", rater_kind="human")
    frames = [human]
    for judge in JUDGES:
        frames.append(read_qrels(source / "judges" / f"{judge}.txt").assign(rater=judge, rater_kind="judge"))
    ratings = pd.concat(frames).assign(metric="relevance")
    ratings = ratings[["case_id", "metric", "rater", "rater_kind", "value"]].reset_index(drop=True)
    ratings.to_parquet(OUT / "ratings.parquet", index=False)

    with (OUT / "cases.jsonl").open("w") as handle:
        for case_id in sorted(human["case_id"]):
            qid, pid = case_id.split("-", 1)
            text = queries[qid].strip()
            first = text.split()[0].lower()
            handle.write(
                json.dumps(
                    {
                        "case_id": case_id,
                        "input": text,
                        "metadata": {
                            "query_id": qid,
                            "passage_id": pid,
                            "question_type": first if first in QUESTION_WORDS else "other",
                        },
                    }
                )
                + "\n"
            )

    families = {row["judge_id"]: row for row in csv.DictReader((source / "judges.csv").open())}
    lines = [
        'name = "trec-dl-2023-llmjudge"',
        'description = "TREC DL 2023 passage relevance: NIST assessors and nine LLM-judge runs of the '
        'LLMJudge challenge (SIGIR 2024 LLM4Eval). MIT license: see LICENSE and SOURCE.md."',
        "# two published labels lie outside the 0-3 scale: they are dropped, and the report lists them",
        'out_of_scale = "drop"',
        "",
        "[metrics.relevance]",
        'scale = "ordinal"',
        "levels = [0, 1, 2, 3]",
        "human_pass = 2",
        "max_false_pass = 0.10",
        'description = "0 irrelevant, 1 related, 2 highly relevant, 3 perfectly relevant; pass = 2 or more"',
        "",
        "[raters.nist-assessor]",
        'description = "NIST assessors (TREC DL 2023 qrels)"',
    ]
    for judge in JUDGES:
        row = families[judge]
        lines += [
            "",
            f"[raters.{judge}]",
            f'family = "{row["family"]}"',
            f'model = "{row["model"]}"',
            "on_metric_scale = true",
            f'description = "{row["size"] or "size n/a"}, prompt {row["prompt"]}, fine-tuned {row["fine_tuned"]}, '
            f'ensemble {row["ensemble"]}"',
        ]
    (OUT / "campaign.toml").write_text("\n".join(lines) + "\n")
    shutil.copy(source / "LICENSE", OUT / "LICENSE")
    (OUT / "SOURCE.md").write_text(
        "# Source of the demo campaign\n\n"
        "The LLMJudge challenge data (SIGIR 2024 LLM4Eval workshop): repositories llm4eval/LLMJudge @81159c6 "
        'and llm4eval/LLMJudge-benchmark @968a1f9; paper: Rahmani et al. 2025, "Judging the Judges" '
        "(arXiv 2502.13908). MIT license, copied in LICENSE.\n\n"
        "- `human_qrels.txt` (NIST assessors) became the `nist-assessor` human ratings;\n"
        f"- the judge runs {', '.join(JUDGES)} became judge ratings, with their model and family from the "
        "paper's Table 2;\n"
        "- `queries.tsv` gave each case its `input`; passage texts are not part of the data.\n\n"
        "Case ids are `QUERY-PASSAGE`. Values are as published: RMITIR-llama70B holds two labels of 5 on "
        "the 0-3 scale, which `calibrate demo` drops (`--out-of-scale drop`) and lists in the report.\n"
        "Built by `scripts/build_demo.py`.\n"
    )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
