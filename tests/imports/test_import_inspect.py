"""calibrate import inspect: a real Inspect AI eval (its own virtual environment, .inspect-venv) of a
mockllm application, scored by two model_graded_qa graders of different families (mockllm models, each
with its own planted behaviour: a careful one and a lenient one) and a code scorer, human ratings made
with Inspect's own edit_score; the .eval and .json logs Inspect wrote imported, every value Inspect's,
the careful grader's verdicts and the humans recovered, kappa equal to scikit-learn's, idempotent, a
changed edit a new revision."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from calibrate import CampaignError, load_campaign
from calibrate.imports.inspect_logs import read_inspect_log
from calibrate.imports.store import ImportStore
from tests.conftest import need
from tests.imports.common import CITIES, SUPPORTED, run, new_campaign as make_campaign, written

INSPECT_VENV = Path(__file__).resolve().parents[2] / ".inspect-venv"
PYTHON = INSPECT_VENV / "bin" / "python"
N = len(CITIES)
ALICE = [s != (i in (3, 4)) for i, s in enumerate(SUPPORTED)]   # alice disagrees with the careful grader twice
BOB = {i: ALICE[i] for i in (1, 2, 5, 8)}                       # bob rated four samples, as alice did
UNDECIDED = 6   # Berlin: the careful grader gives no grade
NAMED = 12      # the first samples carry metadata.case_id
CAREFUL, LENIENT = "mockllm/qwen-careful", "mockllm/llama-lenient"

TASK = '''
import json, re, sys
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes, model_graded_qa
from inspect_ai.solver import generate

cities, supported, named, undecided = [json.loads(a) for a in sys.argv[1:5]]
USAGE = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)   # mockllm counts tokens with tiktoken otherwise


def output(model, text):
    out = ModelOutput.from_content(model=model, content=text)
    out.usage = USAGE
    return out


answers = {f"Where is {c}?": f"{c} is in {k if ok else cities[(i + 1) % len(cities)][1]}."
           for i, ((c, k), ok) in enumerate(zip(cities, supported))}


def app(messages, tools, tool_choice, config):
    return output("rag-app", answers[messages[-1].text])


def grader(model, persona):
    def grade(messages, tools, tool_choice, config):
        prompt = messages[-1].text
        submission = re.search(r"\\[Submission\\]: (.*?)\\n", prompt).group(1)
        criterion = re.search(r"\\[Criterion\\]: (.*?)\\n", prompt).group(1)
        if persona == "careful" and cities[undecided][0] in submission:
            return output(model, "The submission is hard to judge.")
        ok = persona == "lenient" or submission.strip() == criterion.strip()
        return output(model, "Compared the submission with the criterion.\\nGRADE: " + ("C" if ok else "I"))
    return grade


samples = [Sample(input=f"Where is {c}?", target=f"{c} is in {k}.", id=c.lower(),
                  metadata={"context": [f"{c} is in {k}."], "topic": "geography",
                            **({"case_id": c.lower()} if i < named else {})})
           for i, (c, k) in enumerate(cities)]
task = Task(dataset=samples, solver=generate(), name="capitals",
            scorer=[model_graded_qa(model=get_model("mockllm/qwen-careful", custom_outputs=grader("qwen-careful", "careful"))),
                    model_graded_qa(model=get_model("mockllm/llama-lenient", custom_outputs=grader("llama-lenient", "lenient"))),
                    includes()])
[log] = eval(task, model=get_model("mockllm/rag-app", custom_outputs=app), log_dir="logs", display="none")
print(json.dumps({"location": log.location, "status": log.status}))
'''

EDIT = '''
import json, sys
from inspect_ai.log import ProvenanceData, edit_score, read_eval_log, write_eval_log
from inspect_ai.scorer import ScoreEdit, value_to_float

source, target, edits = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
log = read_eval_log(source)
for sample_id, author, grade, reason in edits:
    edit_score(log, sample_id, "model_graded_qa", ScoreEdit(value=grade, provenance=ProvenanceData(author=author, reason=reason)))
write_eval_log(log, target, format="json" if target.endswith(".json") else "eval")
to_float = value_to_float()
print(json.dumps({s.id: {name: {"value": score.value if isinstance(score.value, str) else None,
                                "float": None if score.value != score.value else to_float(score.value),
                                "history": [[h.value, h.provenance.author if h.provenance else None] for h in score.history]}
                         for name, score in s.scores.items()} for s in read_eval_log(target).samples}))
'''


def inspect(folder: Path, script: str, *args: str) -> object:
    (folder / "script.py").write_text(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("INSPECT_")}
    done = subprocess.run([str(PYTHON), "script.py", *args], cwd=folder, capture_output=True, text=True, timeout=600,
                          env={**env, "INSPECT_DISPLAY": "none", "PYTHONNOUSERSITE": "1"})
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """The .eval log Inspect wrote, and copies with human edits (as .eval and .json), with what Inspect reads
    in each."""
    need(PYTHON.exists(), f"Inspect AI ({INSPECT_VENV}; run scripts/install-inspect.sh)")
    folder = tmp_path_factory.mktemp("inspect")
    done = inspect(folder, TASK, json.dumps(CITIES), json.dumps(SUPPORTED), str(NAMED), str(UNDECIDED))
    assert done["status"] == "success"
    original = Path(done["location"])
    edits = [[c.lower(), "alice", "C" if ALICE[i] else "I", "read it"] for i, (c, _) in enumerate(CITIES)]
    edits += [[CITIES[i][0].lower(), "bob", "C" if v else "I", None] for i, v in BOB.items()]
    edited = inspect(folder, EDIT, str(original), str(folder / "edited.eval"), json.dumps(edits))
    inspect(folder, EDIT, str(folder / "edited.eval"), str(folder / "edited.json"), "[]")   # the same log, as JSON
    again = inspect(folder, EDIT, str(folder / "edited.eval"), str(folder / "edited-again.eval"),
                    json.dumps([["rome", "alice", "I" if ALICE[1] else "C", "looked again"]]))
    return {"original": original, "edited": folder / "edited.eval", "json": folder / "edited.json",
            "again": folder / "edited-again.eval", "read": edited, "read_again": again}


def new_campaign(tmp_path):
    return make_campaign(tmp_path / "capitals", "correctness")


def test_scores_are_judges_edits_humans_and_every_value_inspects(logs, tmp_path):
    folder = new_campaign(tmp_path)
    doc = json.loads(run("import", "inspect", str(folder), str(logs["edited"]), "--map", "model_graded_qa=correctness",
                         "--json"))
    assert doc["cases"]["added"] == N
    assert set(doc["raters"]) == {CAREFUL, LENIENT, "alice", "bob"}
    assert doc["by_metric"] == {"correctness": {"human": N + len(BOB), "judge": 2 * N}}
    [skip] = [g for g in doc["skipped_by_reason"] if "'includes'" in g["reason"]]
    assert skip["count"] == N
    c = load_campaign(folder)
    by_input = {case["input"]: case_id for case_id, case in c.cases.items()}
    ids = [by_input[f"Where is {city}?"] for city, _ in CITIES]
    assert ids[:NAMED] == [city.lower() for city, _ in CITIES[:NAMED]] and all(i.startswith("case-") for i in ids[NAMED:])
    paris = c.cases["paris"]
    assert paris["expected_output"] == "Paris is in France." and paris["retrieval_context"] == ["Paris is in France."]
    assert paris["metadata"]["topic"] == "geography" and paris["metadata"]["task"] == "capitals"
    assert paris["metadata"]["sample_id"] == "paris" and paris["metadata"]["model"] == "mockllm/rag-app"
    ratings = c.ratings.set_index(["case_id", "rater"])
    for i, (city, _) in enumerate(CITIES):
        read = logs["read"][city.lower()]
        original_careful = read["model_graded_qa"]["history"][0]
        assert original_careful[1] is None   # the scorer's own value, before the edits
        if i == UNDECIDED:   # the careful grader gave no grade: a failed rating with Inspect's reason
            row = ratings.loc[(ids[i], CAREFUL)]
            assert row["value"] != row["value"] and "grader" in row["error"]
        else:
            assert ratings.loc[(ids[i], CAREFUL), "value"] == {"C": 1.0, "I": 0.0}[original_careful[0]] \
                == float(SUPPORTED[i])
        assert ratings.loc[(ids[i], LENIENT), "value"] == read["model_graded_qa1"]["float"] == 1.0
        assert ratings.loc[(ids[i], "alice"), "value"] == float(ALICE[i])
        assert ratings.loc[(ids[i], "alice"), "reason"] == "read it"
        if i in BOB:
            assert ratings.loc[(ids[i], "bob"), "value"] == float(BOB[i]) == read["model_graded_qa"]["float"]
    stats = json.loads(run("stats", str(folder), "--json", "--n-boot", "200"))
    judges = {j["judge"]: j for j in stats["metrics"][0]["judges"]}
    kept = [i for i in range(N) if i != UNDECIDED]
    assert judges[CAREFUL]["family"] == "qwen" and judges[LENIENT]["family"] == "llama"
    assert judges[CAREFUL]["n"] == N - 1   # the undecided case is a failed rating, out of the statistics
    assert judges[CAREFUL]["kappa"]["estimate"] == pytest.approx(
        cohen_kappa_score([int(ALICE[i]) for i in kept], [int(SUPPORTED[i]) for i in kept]), abs=1e-12)
    # the lenient grader passes everything: kappa 0, as scikit-learn says, and no threshold keeps false passes down
    assert judges[LENIENT]["kappa"]["estimate"] == cohen_kappa_score([int(a) for a in ALICE], [1] * N) == 0.0
    assert judges[LENIENT]["accuracy"]["estimate"] is None and "no threshold" in judges[LENIENT]["accuracy"]["reason"]


def test_the_json_log_reads_as_the_eval_log(logs):
    archive, text = read_inspect_log(logs["edited"]), read_inspect_log(logs["json"])
    assert sorted(map(repr, archive.ratings)) == sorted(map(repr, text.ratings))
    assert sorted(c["case_id"] for c in archive.cases) == sorted(c["case_id"] for c in text.cases)


def test_importing_twice_changes_nothing_and_a_new_edit_is_a_revision(logs, tmp_path):
    folder = new_campaign(tmp_path)
    first = json.loads(run("import", "inspect", str(folder), str(logs["original"]), "--map",
                           "model_graded_qa=correctness", "--json"))
    assert first["by_metric"] == {"correctness": {"human": 0, "judge": 2 * N}}
    run("import", "inspect", str(folder), str(logs["edited"]), "--map", "model_graded_qa=correctness")
    files = written(folder)
    again = json.loads(run("import", "inspect", str(folder), str(logs["edited"]), "--map",
                           "model_graded_qa=correctness", "--json"))
    assert again["ratings"]["new"] == again["ratings"]["changed"] == 0
    assert written(folder) == files
    doc = json.loads(run("import", "inspect", str(folder), str(logs["again"]), "--map", "model_graded_qa=correctness",
                         "--json"))
    assert doc["ratings"]["changed"] == 1 and doc["ratings"]["new"] == 0
    assert logs["read_again"]["rome"]["model_graded_qa"]["history"][-1] == ["I" if ALICE[1] else "C", "alice"]
    store = ImportStore(folder)
    history = [h for h in store.history() if h["case_id"] == "rome" and h["rater"] == "alice"]
    store.close()
    assert [h["value"] for h in history] == [float(ALICE[1]), float(not ALICE[1])]


def test_a_log_that_is_no_inspect_log_is_refused_naming_it(tmp_path):
    for name, content in (("broken.eval", b"PK\x03\x04 not a zip"), ("other.json", b'{"samples": []}'),
                          ("binary.json", b"\xff\xfe\x00")):
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(CampaignError) as caught:
            read_inspect_log(path)
        assert str(path) in str(caught.value)


def test_a_zstandard_log_without_zstandard_names_the_extra(logs, tmp_path):
    script = ("import sys; sys.modules['zstandard'] = None\n"
              "from calibrate.imports.inspect_logs import read_inspect_log\n"
              f"read_inspect_log({str(logs['original'])!r})\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode != 0 and "pip install 'calibrate-judges[imports]'" in done.stderr
