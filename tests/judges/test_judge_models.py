"""Each judge calls its own model: several judges of different models behind one OpenAI-compatible
endpoint (a gateway, one vLLM server), DeepEval and RAGAS mixed, against the scripted server whose
models each answer as their own persona and which refuses a model it does not host."""

import json
import sqlite3

import pandas as pd
import pytest

from calibrate import load_campaign
from calibrate.judges.runner import run_judges
from calibrate.judges.store import STORE_NAME
from tests.conftest import write_campaign
from tests.servers.judge_server import CAREFUL, Judge, JudgeServer, persona_of

#: model calls per case: DeepEval faithfulness (truths, claims, verdicts, reason); RAGAS faithfulness
#: (statements, verdicts)
CALLS = {("deepeval", "faithfulness"): 4, ("ragas", "faithfulness"): 2}


def make_cases(n: int = 6) -> list[dict]:
    """Even cases: an answer the context supports (one claim); odd: one supported claim and one invented."""
    return [
        {
            "case_id": f"c{i:02d}",
            "input": f"What about item {i}?",
            "actual_output": f"Item {i} is blue." + ("" if i % 2 == 0 else f" Item {i} costs nothing."),
            "retrieval_context": [f"Item {i} is blue.", f"Item {i} is round."],
        }
        for i in range(n)
    ]


#: faithfulness of an even (supported) and an odd (half-invented) case, per persona
FAITHFULNESS = {
    "careful": (1.0, 0.5),
    "lenient": (1.0, 1.0),
    "strict": (1.0, 0.0),
    "contrarian": (0.0, 0.5),
    "numbers": (0.0, 0.5),
}  # every claim here holds a digit: "numbers" inverts them all


def judges_toml(url: str, judges: dict[str, tuple[str, str, str]], extra: dict[str, str] | None = None) -> str:
    """``judges``: name -> (library, metric, model name); all on the endpoint ``url``."""
    metrics = sorted({metric for _, metric, _ in judges.values()})
    text = 'name = "models"\n' + "".join(f'[metrics.{m}]\nscale = "binary"\n' for m in metrics)
    for name, (library, metric, model) in judges.items():
        text += (
            f'[judges.{name}]\nlibrary = "{library}"\nmetric = "{metric}"\n'
            f'model = {{ provider = "openai", name = "{model}", base_url = "{url}"'
            f"{(extra or {}).get(name, '')} }}\n"
        )
        if metric == "answer_relevancy":
            text += f'embeddings = {{ provider = "openai", name = "embed-hashed", base_url = "{url}" }}\n'
    return text


def campaign(tmp_path, url, judges, extra=None, cases=None):
    cases = cases or make_cases()
    metrics = sorted({metric for _, metric, _ in judges.values()})
    humans = pd.DataFrame(
        [(c["case_id"], metrics[0], "ann", "human", int(i % 2 == 0)) for i, c in enumerate(cases)],
        columns=["case_id", "metric", "rater", "rater_kind", "value"],
    )
    return write_campaign(tmp_path / "campaign", judges_toml(url, judges, extra), humans, cases)


def test_the_scripted_server_tells_models_apart():
    assert persona_of("gpt-4.1-lenient") == "lenient" and persona_of("meta-llama/Llama-3") == "careful"
    careful = [True, False, True]
    items = ["Item 1 is blue.", "An invented claim.", "Another claim."]
    assert Judge("x-lenient").verdicts(careful, items) == [True, True, True]
    assert Judge("x-strict").verdicts(careful, items) == [False, False, False]
    assert Judge("x-contrarian").verdicts(careful, items) == [False, True, False]
    assert Judge("x-numbers").verdicts(careful, items) == [False, False, True]
    assert Judge("x-verbose").verdicts([False], ["word " * 20]) == [True]
    assert CAREFUL.verdicts(careful, items) == careful
    # noisy: about a fifth of the verdicts flipped, deterministically, and differently per model
    flips = [Judge("a-noisy").inverts(f"claim {i}") for i in range(2000)]
    assert 0.17 < sum(flips) / 2000 < 0.23 and flips == [Judge("a-noisy").inverts(f"claim {i}") for i in range(2000)]
    assert flips != [Judge("b-noisy").inverts(f"claim {i}") for i in range(2000)]
    assert [Judge("x-contrarian").score(s, "text") for s in (0, 3, 10)] == [10, 7, 0]


@pytest.mark.parametrize(
    "setup",
    [
        # two DeepEval judges
        {
            "de-careful": ("deepeval", "faithfulness", "llama-careful"),
            "de-strict": ("deepeval", "faithfulness", "claude-strict"),
        },
        # two RAGAS judges
        {
            "rg-lenient": ("ragas", "faithfulness", "gpt-lenient"),
            "rg-contrarian": ("ragas", "faithfulness", "qwen-contrarian"),
        },
        # DeepEval and RAGAS
        {
            "de-contrarian": ("deepeval", "faithfulness", "mistral-contrarian"),
            "rg-careful": ("ragas", "faithfulness", "llama-careful"),
        },
        # three and four judges, mixed
        {
            "a-de": ("deepeval", "faithfulness", "llama-careful"),
            "b-rg": ("ragas", "faithfulness", "gpt-lenient"),
            "c-de": ("deepeval", "faithfulness", "claude-strict"),
        },
        {
            "a-de": ("deepeval", "faithfulness", "llama-careful"),
            "b-rg": ("ragas", "faithfulness", "gpt-lenient"),
            "c-de": ("deepeval", "faithfulness", "claude-strict"),
            "d-rg": ("ragas", "faithfulness", "qwen-numbers"),
        },
    ],
    ids=["deepeval+deepeval", "ragas+ragas", "deepeval+ragas", "three", "four"],
)
def test_each_request_reaches_its_own_model(tmp_path, setup):
    models = {model for _, _, model in setup.values()}
    with JudgeServer(models=models) as server:  # any other model name: 404
        folder = campaign(tmp_path, server.url, setup)
        doc = run_judges(load_campaign(folder))
    n = len(make_cases())
    assert server.counts["unknown_model"] == 0 and all(j["failed"] == 0 for j in doc["judges"])
    expected_calls = {model: 0 for model in models}
    for library, metric, model in setup.values():
        expected_calls[model] += n * CALLS[(library, metric)]
    assert dict(server.by_model) == expected_calls
    scores = {(r["judge"], r["case_id"]): r["value"] for r in doc["ratings"]}
    for name, (_, _, model) in setup.items():
        even, odd = FAITHFULNESS[persona_of(model)]
        assert [scores[(name, f"c{i:02d}")] for i in range(n)] == [even, odd] * (n // 2), name
    exported = pd.read_csv(folder / "judge_ratings.csv")
    assert sorted(exported["rater"].unique()) == sorted(setup) and len(exported) == n * len(setup)


def test_each_model_sends_its_own_settings_and_embeddings_their_own_name(tmp_path, server):
    setup = {
        "de-hot": ("deepeval", "faithfulness", "llama-careful"),
        "de-cold": ("deepeval", "faithfulness", "gpt-lenient"),
        "rg-relevancy": ("ragas", "answer_relevancy", "qwen-contrarian"),
    }
    extra = {"de-hot": ", temperature = 0.7, max_tokens = 300", "de-cold": ", temperature = 0.0, max_tokens = 50"}
    folder = campaign(tmp_path, server.url, setup, extra)
    doc = run_judges(load_campaign(folder))
    settings = {}
    for request in server.seen:
        settings.setdefault((request["model"], request["path"]), set()).add(
            (request["temperature"], request["max_tokens"], request["json_mode"])
        )
    assert settings == {
        ("llama-careful", "completions"): {(0.7, 300, True)},
        ("gpt-lenient", "completions"): {(0.0, 50, True)},
        ("qwen-contrarian", "completions"): {(0.0, None, True)},
        ("embed-hashed", "embeddings"): {(None, None, False)},
    }
    summary = {j["judge"]: j for j in doc["judges"]}
    assert summary["rg-relevancy"]["calls"] == server.by_model["qwen-contrarian"] + server.by_model["embed-hashed"]
    assert server.by_model["embed-hashed"] > 0
    # the contrarian model calls every committal answer noncommittal: RAGAS scores it 0
    scores = {(r["judge"], r["case_id"]): r["value"] for r in doc["ratings"]}
    assert {v for (judge, _), v in scores.items() if judge == "rg-relevancy"} == {0.0}


def test_each_model_is_priced_at_its_own_price(tmp_path, server):
    setup = {"a": ("deepeval", "faithfulness", "llama-careful"), "b": ("deepeval", "faithfulness", "gpt-lenient")}
    extra = {
        "a": ", price = { input_per_mtok = 1.0, output_per_mtok = 1.0 }",
        "b": ", price = { input_per_mtok = 100.0, output_per_mtok = 100.0 }",
    }
    doc = run_judges(load_campaign(campaign(tmp_path, server.url, setup, extra)))
    with sqlite3.connect(tmp_path / "campaign" / STORE_NAME) as db:
        tokens = dict(
            db.execute(
                "SELECT judge, SUM(prompt_tokens) + SUM(completion_tokens) FROM attempts GROUP BY judge"
            ).fetchall()
        )
    cost = {j["judge"]: j["cost"] for j in doc["judges"]}
    assert cost["a"] == pytest.approx(tokens["a"] * 1.0 / 1e6) and cost["b"] == pytest.approx(tokens["b"] * 100 / 1e6)


def _legacy_store(folder, judges: dict[str, str], url: str) -> None:
    """A store as calibrate 0.1.0 wrote it (schema 4, no client column), one run of ``judges``
    (name -> model) on ``url``, each with a success under the key the present code computes."""
    from calibrate.judges.runner import _keyed

    c = load_campaign(folder)
    with sqlite3.connect(folder / STORE_NAME) as db:
        db.executescript("""
            CREATE TABLE attempts (id INTEGER PRIMARY KEY AUTOINCREMENT, cache_key TEXT NOT NULL, run_id TEXT NOT NULL,
                judge TEXT NOT NULL, metric TEXT NOT NULL, case_id TEXT NOT NULL, repeat INTEGER NOT NULL, value REAL,
                error TEXT, reason TEXT, calls INTEGER NOT NULL DEFAULT 0, prompt_tokens INTEGER,
                completion_tokens INTEGER, cost REAL, latency_s REAL, self_eval INTEGER NOT NULL DEFAULT 0,
                created TEXT NOT NULL, CHECK ((value IS NULL) != (error IS NULL)));
            CREATE INDEX attempts_key ON attempts (cache_key);
            CREATE TABLE runs (run_id TEXT PRIMARY KEY, started TEXT NOT NULL, finished TEXT, manifest TEXT NOT NULL);
            ALTER TABLE attempts ADD COLUMN details TEXT;
            PRAGMA user_version = 4;""")
        manifest = {
            "run_id": "old",
            "judges": [
                {"name": n, "model": {"provider": "openai", "name": m, "base_url": url, "temperature": 0.0}}
                for n, m in judges.items()
            ],
        }
        db.execute("INSERT INTO runs VALUES ('old', '2026-11-01', '2026-11-01', ?)", (json.dumps(manifest),))
        for name in judges:
            for task in _keyed(c, c.judges[name], 1):
                db.execute(
                    "INSERT INTO attempts (cache_key, run_id, judge, metric, case_id, repeat, value, created) "
                    "VALUES (?, 'old', ?, 'faithfulness', ?, 0, 0.123, '2026-11-01')",
                    (task.key, name, task.case_id),
                )


def test_answers_stored_under_the_shared_client_defect_are_kept_but_never_served(tmp_path, server):
    setup = {"a": ("deepeval", "faithfulness", "llama-careful"), "b": ("deepeval", "faithfulness", "gpt-lenient")}
    folder = campaign(tmp_path, server.url, setup)
    _legacy_store(folder, {"a": "llama-careful", "b": "gpt-lenient"}, server.url)
    doc = run_judges(load_campaign(folder))
    assert [(j["from_cache"], j["scored"], j["rescored_suspect"]) for j in doc["judges"]] == [(0, 6, 6), (0, 6, 6)]
    assert {r["value"] for r in doc["ratings"]} == {1.0, 0.5}  # the models' own answers, not the old 0.123
    with sqlite3.connect(folder / STORE_NAME) as db:
        assert db.execute("SELECT COUNT(*) FROM attempts WHERE value = 0.123").fetchone()[0] == 12  # kept
    assert 0.123 not in set(pd.read_csv(folder / "judge_ratings.csv")["value"])


def test_a_run_with_one_model_per_endpoint_was_not_affected(tmp_path, server):
    setup = {"a": ("deepeval", "faithfulness", "llama-careful")}
    folder = campaign(tmp_path, server.url, setup)
    _legacy_store(folder, {"a": "llama-careful"}, server.url)
    doc = run_judges(load_campaign(folder))
    assert doc["judges"][0]["from_cache"] == 6 and server.counts["requests"] == 0


def test_logprob_settings_are_each_judges_own(tmp_path, server):
    """Two G-Eval judges on one endpoint: one asks for the score tokens' probabilities, one does not."""
    cases = [
        {
            "case_id": "same",
            "input": "Where is Paris?",
            "actual_output": "Paris is located in France.",
            "expected_output": "Paris is located in France.",
        }
    ]
    config = 'name = "geval"\n[metrics.correctness]\nscale = "continuous"\nhuman_pass = 0.5\n'
    for name, model, extra in (
        ("weighted", "llama-careful", "top_logprobs = 5"),
        ("plain", "qwen-contrarian", "logprobs = false"),
    ):
        config += (
            f'[judges.{name}]\nlibrary = "deepeval"\nmetric = "g_eval"\ninto = "correctness"\n'
            f'model = {{ provider = "openai", name = "{model}", base_url = "{server.url}" }}\n'
            'settings = { evaluation_params = ["actual_output", "expected_output"], evaluation_steps = '
            f'["Compare the two."], {extra} }}\n'
        )
    humans = pd.DataFrame(
        {"case_id": ["same"], "metric": "correctness", "rater": "ann", "rater_kind": "human", "value": [1.0]}
    )
    doc = run_judges(load_campaign(write_campaign(tmp_path / "geval", config, humans, cases)))
    asked = {(r["model"], r["logprobs"], r["top_logprobs"]) for r in server.seen}
    assert asked == {("llama-careful", True, 5), ("qwen-contrarian", None, None)}
    scores = {r["judge"]: r for r in doc["ratings"]}
    assert scores["weighted"]["details"]["logprob_weighted"] and scores["weighted"]["value"] > 0.9
    assert scores["plain"]["value"] == 0.0  # the contrarian model gives 10 - 10
