"""calibrate import promptfoo: a real promptfoo eval (from npm) of a local application, its llm-rubric
assertions graded by two models of different families on the scripted judge server (a careful one and a
lenient one), manual ratings given through a real promptfoo viewer, the eval exported; imported,
every value promptfoo's own, the careful grader's planted verdicts recovered, kappa equal to
scikit-learn's, idempotent, a changed manual rating a new revision."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from calibrate import load_campaign
from calibrate.cli import main
from calibrate.imports.store import ImportStore
from tests.conftest import need
from tests.imports.common import CITIES, SUPPORTED, run, written
from tests.imports.common import new_campaign as make_campaign
from tests.servers.promptfoo_tool import PROMPTFOO, Promptfoo

N = len(CITIES)
#: the manual ratings: the truth, but for two cases where the human disagrees with the careful grader
HUMAN = [s != (i in (3, 4)) for i, s in enumerate(SUPPORTED)]
FAILED = 6  # Berlin: both graders' replies are malformed
NAMED = 12  # the first tests carry metadata.case_id; the others get content ids
CAREFUL, LENIENT = "openai:chat:qwen-careful", "openai:chat:llama-lenient"
RUBRIC = "The answer is supported by: {{context}}"


def answer(i: int) -> str:
    city, country = CITIES[i]
    return f"{city} is in {country if SUPPORTED[i] else CITIES[(i + 1) % N][1]}."


def config(url: str) -> dict:
    grader = {"apiBaseUrl": url, "apiKey": "scripted"}
    return {
        "description": "rag eval",
        "prompts": ["Answer from the context.\nContext: {{context}}\nQuestion: {{question}}"],
        "providers": [{"id": "file://provider.js", "label": "rag-app"}],
        "defaultTest": {
            "options": {"provider": {"id": CAREFUL, "config": grader}},
            "assert": [
                {"type": "llm-rubric", "value": RUBRIC, "metric": "faithfulness"},
                {
                    "type": "llm-rubric",
                    "value": RUBRIC,
                    "metric": "faithfulness",
                    "provider": {"id": LENIENT, "config": grader},
                },
                {"type": "icontains", "value": "{{country}}"},
            ],
        },
        "tests": [
            {
                "description": city,
                "vars": {"question": f"Where is {city}?", "context": f"{city} is in {country}.", "country": country},
                **({"metadata": {"case_id": city.lower()}} if i < NAMED else {}),
            }
            for i, (city, country) in enumerate(CITIES)
        ],
    }


@pytest.fixture(scope="module")
def promptfoo(tmp_path_factory):
    """The eval as promptfoo wrote it, then rated in its viewer and exported: paths, the tool and the
    requests each grader model received."""
    from tests.servers.judge_server import JudgeServer

    need(PROMPTFOO.exists(), f"promptfoo ({PROMPTFOO}; run scripts/install-promptfoo.sh)")
    tool = Promptfoo(tmp_path_factory.mktemp("promptfoo"))
    with JudgeServer(models={"qwen-careful", "llama-lenient"}) as server:
        server.inject(CITIES[FAILED][0], "malformed", times=100)
        results = tool.eval(config(server.url), {f"Where is {c}?": answer(i) for i, (c, _) in enumerate(CITIES)})
        calls = dict(server.by_model)
    eval_id = json.loads(results.read_text())["evalId"]
    tool.rate(results, {i: (HUMAN[i], f"checked {CITIES[i][0]}") for i in range(N)})
    rated = tool.export(eval_id, "rated.json")
    return {"tool": tool, "results": results, "rated": rated, "eval_id": eval_id, "calls": calls}


def new_campaign(tmp_path):
    return make_campaign(tmp_path / "bot", "faithfulness")


def case_ids(campaign) -> list[str]:
    """The campaign's case of each city, in order."""
    by_input = {case["input"]: case_id for case_id, case in campaign.cases.items()}
    return [by_input[f"Where is {city}?"] for city, _ in CITIES]


def test_graders_are_judges_viewer_ratings_humans_and_every_value_promptfoos(promptfoo, tmp_path):
    assert promptfoo["calls"]["qwen-careful"] >= N and promptfoo["calls"]["llama-lenient"] >= N
    folder = new_campaign(tmp_path)
    doc = json.loads(
        run("import", "promptfoo", str(folder), str(promptfoo["rated"]), "--map", "human=faithfulness", "--json")
    )
    assert doc["cases"]["added"] == N
    assert doc["by_metric"] == {"faithfulness": {"human": N, "judge": 2 * N}}
    assert set(doc["raters"]) == {CAREFUL, LENIENT, "promptfoo-viewer"}
    assert doc["raters"][CAREFUL]["model"] == "qwen-careful"
    [skip] = [g for g in doc["skipped_by_reason"] if "icontains" in g["reason"]]
    assert skip["count"] == N and "--map 'icontains=METRIC'" in skip["reason"]
    c = load_campaign(folder)
    ids = case_ids(c)
    assert ids[:NAMED] == [city.lower() for city, _ in CITIES[:NAMED]]
    assert all(i.startswith("case-") for i in ids[NAMED:])
    paris = c.cases["paris"]  # an answer its context does not support
    assert paris["actual_output"] == "Paris is in Italy." and paris["retrieval_context"] == ["Paris is in France."]
    assert paris["metadata"]["vars"] == {"country": "France"} and paris["metadata"]["provider"] == "rag-app"
    ratings = c.ratings.set_index(["case_id", "rater"])
    # every judge value is promptfoo's own component score; the careful grader passes exactly the supported answers
    exported = json.loads(promptfoo["rated"].read_text())["results"]["results"]
    for result in exported:
        i = result["testIdx"]
        careful, lenient = result["gradingResult"]["componentResults"][:2]
        if i == FAILED:
            for rater, component in ((CAREFUL, careful), (LENIENT, lenient)):
                row = ratings.loc[(ids[i], rater)]
                assert pd_isna(row["value"]) and row["error"] == component["reason"]
            continue
        assert ratings.loc[(ids[i], CAREFUL), "value"] == careful["score"] == float(SUPPORTED[i])
        assert ratings.loc[(ids[i], LENIENT), "value"] == lenient["score"] == 1.0
        assert ratings.loc[(ids[i], "promptfoo-viewer"), "value"] == float(HUMAN[i])
        assert ratings.loc[(ids[i], "promptfoo-viewer"), "reason"] == f"checked {CITIES[i][0]}"
    # the statistics: kappa of each grader equals scikit-learn's on the same values (the failed case left out)
    stats = json.loads(run("stats", str(folder), "--json", "--n-boot", "200"))
    judges = {j["judge"]: j for j in stats["metrics"][0]["judges"]}
    kept = [i for i in range(N) if i != FAILED]
    human = [int(HUMAN[i]) for i in kept]
    assert judges[CAREFUL]["kappa"]["estimate"] == pytest.approx(
        cohen_kappa_score(human, [int(SUPPORTED[i]) for i in kept]), abs=1e-12
    )
    assert judges[CAREFUL]["n"] == N - 1 and judges[CAREFUL]["family"] == "qwen"
    # the lenient grader passes everything: kappa 0, as scikit-learn says, and no threshold keeps false passes down
    assert judges[LENIENT]["family"] == "llama"
    assert judges[LENIENT]["kappa"]["estimate"] == cohen_kappa_score(human, [1] * len(human)) == 0.0
    assert judges[LENIENT]["accuracy"]["estimate"] is None and "no threshold" in judges[LENIENT]["accuracy"]["reason"]
    # where the ratings came from, as stats --json and the report say
    rows = {(r["origin"], r["kind"]): (r["raters"], r["ratings"]) for r in stats["provenance"]}
    assert rows == {
        ("calibrate import: promptfoo", "human"): (1, N),
        ("calibrate import: promptfoo", "judge"): (2, 2 * N),
    }


def pd_isna(value) -> bool:
    return value != value


def test_the_eval_without_ratings_then_rated_then_rated_again(promptfoo, tmp_path):
    folder = new_campaign(tmp_path)
    first = json.loads(
        run("import", "promptfoo", str(folder), str(promptfoo["results"]), "--map", "human=faithfulness", "--json")
    )
    assert first["by_metric"] == {"faithfulness": {"human": 0, "judge": 2 * N}}
    rated = json.loads(
        run("import", "promptfoo", str(folder), str(promptfoo["rated"]), "--map", "human=faithfulness", "--json")
    )
    assert rated["cases"] == {"added": 0, "unchanged": N, "completed": 0}
    assert rated["ratings"]["new"] == N and rated["ratings"]["unchanged"] == 2 * N
    files = written(folder)
    again = json.loads(
        run("import", "promptfoo", str(folder), str(promptfoo["rated"]), "--map", "human=faithfulness", "--json")
    )
    assert again["ratings"] == {
        "new": 0,
        "changed": 0,
        "unchanged": 3 * N,
        "restored": 0,
        "withdrawn": 0,
        "absent_kept": 0,
        "absent_held": 0,
    }
    assert written(folder) == files
    # the human looks again at Rome in the viewer: a new revision, the first kept in the store
    tool = promptfoo["tool"]
    tool.rate(promptfoo["rated"], {1: (not HUMAN[1], "looked again")})
    changed = tool.export(promptfoo["eval_id"], "rated-again.json")
    dry = json.loads(
        run("import", "promptfoo", str(folder), str(changed), "--map", "human=faithfulness", "--json", "--dry-run")
    )
    assert dry["ratings"]["changed"] == 1 and dry["files"] == []
    assert written(folder) == files
    doc = json.loads(run("import", "promptfoo", str(folder), str(changed), "--map", "human=faithfulness", "--json"))
    assert doc["ratings"]["changed"] == 1 and doc["ratings"]["unchanged"] == 3 * N - 1
    store = ImportStore(folder)
    history = [h for h in store.history() if h["case_id"] == "rome" and h["rater"] == "promptfoo-viewer"]
    store.close()
    assert [h["value"] for h in history] == [float(HUMAN[1]), float(not HUMAN[1])]
    c = load_campaign(folder)
    rome = c.ratings[(c.ratings["case_id"] == "rome") & (c.ratings["rater"] == "promptfoo-viewer")]
    assert rome["value"].tolist() == [float(not HUMAN[1])] and rome["reason"].tolist() == ["looked again"]


def test_a_grader_promptfoo_chose_itself_is_named_by_the_user(promptfoo, tmp_path):
    data = json.loads(promptfoo["results"].read_text())
    data["config"]["defaultTest"]["options"] = {}
    for result in data["results"]["results"]:
        result["testCase"].pop("options", None)
        result["gradingResult"]["componentResults"] = result["gradingResult"]["componentResults"][:1]
    path = tmp_path / "default-grader.json"
    path.write_text(json.dumps(data))
    folder = new_campaign(tmp_path)
    out = CliRunner().invoke(main, ["import", "promptfoo", str(folder), str(path)])
    assert out.exit_code == 2 and "names no judge for its ratings: name it (--rater NAME)" in out.output
    doc = json.loads(run("import", "promptfoo", str(folder), str(path), "--rater", "my-grader", "--json"))
    assert doc["by_metric"] == {"faithfulness": {"human": 0, "judge": N}} and set(doc["raters"]) == {"my-grader"}
