"""Benchmark: `calibrate labelstudio push` and `pull` of 10,000 cases with 5 retrieved contexts each,
against a real Label Studio server started on 127.0.0.1 (scripts/install-label-studio.sh installs it).

    python bench/bench_labelstudio.py [--cases 10000] [--contexts 5]

Prints the time of a first push (project made, every case imported), of a second push (nothing to
add), and of a pull of one annotation per case (two metrics: faithfulness, and contextual relevancy
per chunk). The annotations are imported in bulk with their tasks into a project the campaign is
then pointed at, since making 10,000 annotations one API call at a time is not what is measured.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from calibrate import load_campaign  # noqa: E402
from calibrate.humans.labelstudio.client import connect, pull, push  # noqa: E402
from calibrate.humans.labelstudio.interface import build_interface, task_data  # noqa: E402
from calibrate.humans.labelstudio.store import RATINGS_FILE, LabelStore  # noqa: E402
from tests.conftest import write_campaign  # noqa: E402
from tests.servers.labelstudio_server import LabelStudioServer  # noqa: E402

TOML = """name = "bench"
[metrics.faithfulness]
scale = "binary"
[metrics.contextual_relevancy]
scale = "continuous"
range = [0, 1]
human_pass = 0.5
"""


def make_cases(n: int, contexts: int) -> list[dict]:
    return [
        {
            "case_id": f"c{i:05d}",
            "input": f"What does document {i} say about topic {i % 97}?",
            "actual_output": f"Document {i} says that topic {i % 97} matters. It gives three reasons.",
            "retrieval_context": [
                f"Chunk {k} of document {i}: a passage of ordinary length about topic "
                f"{(i + k) % 97}, with enough words to look like retrieved text."
                for k in range(contexts)
            ],
        }
        for i in range(n)
    ]


def result(i: int, contexts: int) -> list[dict]:
    out = [
        {
            "from_name": "faithfulness",
            "to_name": "answer",
            "type": "choices",
            "value": {"choices": ["pass" if i % 3 else "fail"]},
        }
    ]
    out += [
        {
            "from_name": f"contextual_relevancy__chunk_{k}",
            "to_name": f"contextual_relevancy__chunk_text_{k}",
            "type": "choices",
            "value": {"choices": ["relevant" if (i + k) % 2 else "not relevant"]},
        }
        for k in range(contexts)
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--contexts", type=int, default=5)
    args = parser.parse_args()
    cases = make_cases(args.cases, args.contexts)
    humans = pd.DataFrame(
        {
            "case_id": [cases[0]["case_id"]],
            "metric": "faithfulness",
            "rater": "lead",
            "rater_kind": "human",
            "value": [1],
        }
    )
    with tempfile.TemporaryDirectory() as tmp, LabelStudioServer(Path(tmp) / "ls") as server:
        folder = write_campaign(Path(tmp) / "campaign", TOML, humans, cases)
        start = time.perf_counter()
        first = push(load_campaign(folder), url=server.url, api_key=server.token)
        print(
            f"push of {args.cases} cases x {args.contexts} contexts: {time.perf_counter() - start:.1f} s "
            f"({first['tasks_added']} tasks added)"
        )
        start = time.perf_counter()
        again = push(load_campaign(folder), url=server.url, api_key=server.token)
        print(f"second push (nothing new): {time.perf_counter() - start:.1f} s ({again['tasks_added']} added)")

        client = connect(server.url, server.token)
        campaign = load_campaign(folder)
        interface = build_interface(campaign)
        annotator = client.users.create(email="bench@calibrate.test", username="bench", password="bench-password-1").id
        project = client.projects.create(title="bench annotated", label_config=interface.xml)
        tasks = [task_data(case_id, case) for case_id, case in sorted(campaign.cases.items())]
        for start_row in range(0, len(tasks), 1000):
            batch = [
                {"data": t, "annotations": [{"result": result(i, args.contexts), "completed_by": annotator}]}
                for i, t in enumerate(tasks[start_row : start_row + 1000], start=start_row)
            ]
            client.projects.import_tasks(id=project.id, request=batch)
        store = LabelStore(folder)
        store.set_project(server.url, project.id, sorted(interface.metrics))
        store.close()
        start = time.perf_counter()
        pulled = pull(load_campaign(folder), url=server.url, api_key=server.token)
        seconds = time.perf_counter() - start
        rows = len(pd.read_csv(folder / RATINGS_FILE))
        print(
            f"pull of {pulled['annotations']} annotations ({pulled['labels']} labels, {rows} ratings written): "
            f"{seconds:.1f} s"
        )


if __name__ == "__main__":
    main()
