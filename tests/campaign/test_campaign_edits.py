"""Campaign edits have a way through: removing a metric, a judge or a rater from campaign.toml sets the
ratings calibrate exported aside (kept in their files and stores, listed by validate, noted by stats and
the report, out of every statistic) instead of stranding the campaign, and putting it back brings them
back, row for row; `cache clear` never deletes paid attempts unasked; a whole read withdraws no more
than a partial reply could explain, says what it withdrew, and can be undone. And campaign.toml, attacked
with any TOML value at any key: a list of problems, or a campaign, never a traceback."""

from __future__ import annotations

import copy
import json
import math
import os
import re
import tomllib
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate import CampaignError, load_campaign
from calibrate.campaign.config import MAX_NESTING, read_toml
from calibrate.imports.apply import import_batch, undo_withdrawals
from calibrate.imports.records import ImportedRating, SourceBatch
from calibrate.imports.store import ImportStore
from calibrate.judges.store import STORE_NAME, JudgeStore
from tests.conftest import run_cli, write_campaign

N = 8
EXPORTED = ("judge_ratings.csv", "imported_ratings.csv", "labelstudio_ratings.csv")


def toml(url: str, *, relevance: bool = True, judge_b: bool = True, rater_a: bool = True) -> str:
    text = """
name = "edits"
[metrics.faithfulness]
scale = "binary"
"""
    if relevance:
        text += '[metrics.relevance]\nscale = "binary"\n'
    text += f"""
[judges.a]
library = "deepeval"
metric = "faithfulness"
model = {{ provider = "openai", name = "llama-careful", base_url = "{url}" }}
"""
    if relevance and judge_b:
        text += f"""
[judges.b]
library = "deepeval"
metric = "answer_relevancy"
into = "relevance"
model = {{ provider = "openai", name = "gpt-lenient", base_url = "{url}" }}
"""
    if rater_a:
        text += '[raters.a]\nfamily = "llama"\nmodel = "llama-careful"\n'
    return text


def cases() -> list[dict]:
    return [
        {
            "case_id": f"c{i}",
            "input": f"What about item {i}?",
            "actual_output": f"Item {i} is blue." + ("" if i % 2 == 0 else f" Item {i} costs nothing."),
            "retrieval_context": [f"Item {i} is blue."],
        }
        for i in range(N)
    ]


def label_studio_export(path: Path) -> Path:
    """Two annotators' labels of both metrics, as a Label Studio JSON export."""
    tasks = []
    for i in range(N):
        annotations = [
            {
                "id": 100 * i + who,
                "completed_by": who,
                "project": 7,
                "updated_at": "2026-11-01T10:00:00Z",
                "result": [
                    {
                        "from_name": metric,
                        "to_name": "answer",
                        "type": "choices",
                        "value": {"choices": ["pass" if (i + who + len(metric)) % 3 else "fail"]},
                    }
                    for metric in ("faithfulness", "relevance")
                ],
            }
            for who in (1, 2)
        ]
        tasks.append(
            {
                "id": i + 1,
                "data": {"case_id": f"c{i}", "input": f"What about item {i}?"},
                "annotations": annotations,
                "drafts": [],
            }
        )
    path.write_text(json.dumps(tasks))
    return path


def source(whole: bool = False, skip: set = frozenset()) -> SourceBatch:
    """Another tool's judge, rating both metrics."""
    ratings = [
        ImportedRating(f"c{i}", metric, "tool-judge", "judge", round(0.1 * i + 0.05 * k, 3), f"{metric}-{i}")
        for i in range(N)
        for k, metric in enumerate(("Faithfulness", "Relevance"))
        if (i, metric) not in skip
    ]
    return SourceBatch("mytool", "mytool:store", "my tool's store", cases=[], ratings=ratings, whole=whole)


@pytest.fixture
def campaign(tmp_path, server):
    """Two metrics; human labels of faithfulness in ratings.csv and of both in Label Studio; judges a
    (faithfulness) and b (relevance) scored by calibrate judge; another tool's judge of both imported."""
    humans = pd.DataFrame(
        {
            "case_id": [f"c{i}" for i in range(N)],
            "metric": "faithfulness",
            "rater": "ann",
            "rater_kind": "human",
            "value": [int(i % 2 == 0) for i in range(N)],
        }
    )
    folder = write_campaign(tmp_path / "campaign", toml(server.url), humans, cases())
    assert run_cli("judge", folder).returncode == 0
    pulled = run_cli("labelstudio", "pull", folder, "--file", label_studio_export(tmp_path / "export.json"))
    assert pulled.returncode == 0, pulled.stderr
    import_batch(folder, source())
    return folder


def exported_rows(folder: Path) -> dict[str, list[tuple]]:
    """The rows of the files calibrate exported, as they are in the files."""
    return {
        name: sorted(map(tuple, pd.read_csv(folder / name, dtype=str, keep_default_na=False).values.tolist()))
        for name in EXPORTED
    }


def statistic_rows(folder: Path) -> list[tuple]:
    ratings = load_campaign(folder).ratings
    return sorted(zip(ratings["case_id"], ratings["metric"], ratings["rater"], ratings["value"].fillna(-1)))


def every_command_works(folder: Path, server, *, expected_note: str) -> None:
    validated = run_cli("validate", folder)
    assert validated.returncode == 0, validated.stderr
    assert expected_note in validated.stdout.replace("\n", " "), validated.stdout
    assert "set aside: " in validated.stdout
    stats = run_cli("stats", folder, "--n-boot", 20, "--json")
    assert stats.returncode == 0, stats.stderr
    doc = json.loads(stats.stdout)
    notes = " ".join([doc.get("set_aside_note") or ""] + [w for m in doc["metrics"] for w in m["warnings"]])
    assert expected_note in notes, notes
    assert run_cli("stats", folder, "--n-boot", 20).returncode == 0
    server.counts.clear()
    judged = run_cli("judge", folder)
    assert judged.returncode == 0 and server.counts["requests"] == 0, judged.stderr  # from the cache
    again = run_cli("import", "deepeval", folder, "--help")
    assert again.returncode == 0
    imported = import_batch(folder, source())
    assert imported["ratings"]["withdrawn"] == 0 and not imported["skipped"]
    report = run_cli("report", folder, "--out", folder.parent / "report", "--n-boot", 20)
    assert report.returncode == 0, report.stderr
    for name in ("report.html", "report.md"):
        text = (folder.parent / "report" / name).read_text().replace("\n", " ").replace("\\_", "_")
        assert expected_note.split(" (")[0] in text, name


def test_removing_a_metric_sets_its_ratings_aside_and_restoring_it_loses_nothing(campaign, server):
    folder = campaign
    files, statistics = exported_rows(folder), statistic_rows(folder)
    assert {m for _, m, _, _ in statistics} == {"faithfulness", "relevance"}
    (folder / "campaign.toml").write_text(toml(server.url, relevance=False))
    c = load_campaign(folder)
    assert set(c.ratings["metric"]) == {"faithfulness"}
    aside = {(Path(s.file).name, s.rater) for s in c.set_aside}
    assert aside == {
        ("judge_ratings.csv", "b"),
        ("imported_ratings.csv", "tool-judge"),
        ("labelstudio_ratings.csv", "ls-user-1"),
        ("labelstudio_ratings.csv", "ls-user-2"),
    }
    assert {s.why for s in c.set_aside} == {"metric"} and len(c.set_aside) == 4 * N
    every_command_works(
        folder,
        server,
        expected_note=f"{4 * N} rating(s) in imported_ratings.csv and "
        "judge_ratings.csv and labelstudio_ratings.csv are of metric(s) no longer declared in "
        "campaign.toml (relevance)",
    )
    # a later import of a source that still rates the removed metric stores it, set aside, not withdrawn
    changed = import_batch(
        folder,
        SourceBatch(
            "mytool",
            "mytool:store",
            "s",
            ratings=[ImportedRating("c1", "Relevance", "tool-judge", "judge", 0.99, "relevance-1")],
        ),
    )
    assert changed["ratings"]["changed"] == 1 and changed["set_aside"] == {"ratings": 1, "metrics": ["relevance"]}
    assert "relevance" not in set(load_campaign(folder).ratings["metric"])
    import_batch(folder, source())  # the source's value again
    assert exported_rows(folder) == files  # kept in every file, row for row
    (folder / "campaign.toml").write_text(toml(server.url))
    assert (
        exported_rows(folder) == files and statistic_rows(folder) == statistics and not load_campaign(folder).set_aside
    )


def test_removing_a_judge_or_a_rater_sets_aside_only_what_it_must(campaign, server):
    folder = campaign
    files, statistics = exported_rows(folder), statistic_rows(folder)
    (folder / "campaign.toml").write_text(toml(server.url, judge_b=False))
    c = load_campaign(folder)
    assert {(Path(s.file).name, s.rater, s.why) for s in c.set_aside} == {("judge_ratings.csv", "b", "judge")}
    assert "b" not in set(c.ratings["rater"]) and len(c.set_aside) == N
    every_command_works(
        folder,
        server,
        expected_note=f"{N} rating(s) in judge_ratings.csv are by judge(s) no longer declared in campaign.toml (b)",
    )
    assert exported_rows(folder) == files  # the judge run kept b's rows in judge_ratings.csv
    (folder / "campaign.toml").write_text(toml(server.url))
    assert statistic_rows(folder) == statistics and not load_campaign(folder).set_aside
    # a rater's table holds facts only: without it, its ratings stay, and nothing is set aside
    (folder / "campaign.toml").write_text(toml(server.url, rater_a=False))
    c = load_campaign(folder)
    assert statistic_rows(folder) == statistics and not c.set_aside and c.rater("a").model == "llama-careful"
    assert run_cli("validate", folder).returncode == 0 and run_cli("stats", folder, "--n-boot", 20).returncode == 0
    (folder / "campaign.toml").write_text(toml(server.url))
    assert statistic_rows(folder) == statistics and exported_rows(folder) == files


def test_the_users_own_file_must_agree_and_says_how(tmp_path):
    folder = write_campaign(
        tmp_path / "c",
        'name = "x"\n[metrics.f]\nscale = "binary"\n',
        "case_id,metric,rater,rater_kind,value\na,f,h,human,1\na,gone,h,human,1\n",
    )
    with pytest.raises(CampaignError) as raised:
        load_campaign(folder)
    problem = raised.value.problems[0]
    assert (problem.row, problem.field, problem.value) == (3, "metric", "gone")
    assert "take its rows out of your own ratings file too" in problem.expected


def test_a_judge_of_a_removed_metric_is_named_with_what_to_do(tmp_path):
    folder = write_campaign(
        tmp_path / "c",
        'name = "x"\n[metrics.f]\nscale = "binary"\n[judges.j]\nlibrary = '
        '"deepeval"\nmetric = "faithfulness"\nmodel = { provider = "openai", name = "m" }\n',
        "case_id,metric,rater,rater_kind,value\na,f,h,human,1\n",
    )
    with pytest.raises(CampaignError) as raised:
        load_campaign(folder)
    assert "remove its [judges] table too" in str(raised.value) and "judges.j.metric" in str(raised.value)


# ------------------------------------------------------------------------------------------ cache clear
def test_cache_clear_lists_the_paid_attempts_and_deletes_only_when_told(campaign, server):
    folder = campaign
    store = JudgeStore(folder / STORE_NAME)
    before = store.count()
    store.close()
    refused = run_cli("cache", "clear", folder)
    assert refused.returncode == 1 and "nothing was deleted: give --yes" in refused.stderr
    assert f"holds {before} stored attempt(s)" in refused.stdout and re.search(
        r"^  a: \d+ attempt", refused.stdout, re.M
    )
    store = JudgeStore(folder / STORE_NAME)
    assert store.count() == before
    store.close()
    cleared = run_cli("cache", "clear", folder, "--yes")
    assert cleared.returncode == 0 and f"deleted {before} stored attempt(s)" in cleared.stdout


# ------------------------------------------------------------------------------------------ withdrawals
def imported(folder: Path) -> list[tuple]:
    return sorted(map(tuple, pd.read_csv(folder / "imported_ratings.csv", dtype=str).values.tolist()))


def test_a_partial_whole_read_withdraws_nothing_a_real_deletion_is_listed_and_undone(tmp_path):
    folder = write_campaign(
        tmp_path / "c",
        'name = "w"\n[metrics.faithfulness]\nscale = "binary"\n[metrics.relevance]\nscale = "binary"\n',
        "case_id,metric,rater,rater_kind,value\n",
        cases(),
    )
    import_batch(folder, source(whole=True))
    full = imported(folder)
    # a reply that lost half the list: not taken for 8 deletions
    half = import_batch(folder, source(whole=True, skip={(i, "Relevance") for i in range(N)}))
    assert half["ratings"]["withdrawn"] == 0 and half["ratings"]["absent_held"] == N and not half["withdrawn"]
    assert imported(folder) == full
    # two deleted there: withdrawn, each listed, and undone
    two = import_batch(folder, source(whole=True, skip={(0, "Relevance"), (3, "Faithfulness")}))
    assert two["ratings"]["withdrawn"] == 2
    assert [(w["case_id"], w["metric"]) for w in two["withdrawn"]] == [("c0", "relevance"), ("c3", "faithfulness")]
    assert len(imported(folder)) == len(full) - 2
    assert undo_withdrawals(folder, two["import_id"])["reinstated"] == 2 and imported(folder) == full
    # the half reply again, told that they were deleted there
    told = import_batch(folder, source(whole=True, skip={(i, "Relevance") for i in range(N)}), allow_withdraw=True)
    assert told["ratings"]["withdrawn"] == N and len(imported(folder)) == len(full) - N
    store = ImportStore(folder)
    assert len(store.history()) == len(full) + 2  # nothing deleted: two revisions appended by the undo
    store.close()


# ------------------------------------------------------------------------------------------ campaign.toml attacked
KEYS = [
    "name",
    "description",
    "out_of_scale",
    "metrics",
    "metrics.m",
    "metrics.m.scale",
    "metrics.m.human_pass",
    "metrics.m.levels",
    "metrics.m.range",
    "metrics.m.max_false_pass",
    "metrics.m.cost_false_pass",
    "metrics.m.description",
    "raters",
    "raters.r",
    "raters.r.family",
    "raters.r.higher_is_better",
    "raters.r.on_metric_scale",
    "judges",
    "judges.j",
    "judges.j.library",
    "judges.j.metric",
    "judges.j.into",
    "judges.j.model",
    "judges.j.model.provider",
    "judges.j.model.name",
    "judges.j.model.temperature",
    "judges.j.model.max_tokens",
    "judges.j.model.price",
    "judges.j.model.price.input_per_mtok",
    "judges.j.embeddings",
    "judges.j.family",
    "judges.j.settings",
    "judges.j.settings.threshold",
    "judges.j.settings.include_reason",
    "juries",
    "juries.p",
    "juries.p.judges",
    "juries.p.combine",
    "juries.p.metrics",
    "service",
    "service.url",
    "service.method",
    "service.headers",
    "service.body",
    "service.answer",
    "service.timeout_s",
    "unknown",
    "metrics.m.unknown",
    "judges.j.model.api_key",
]
BASE = {
    "name": "attacked",
    "metrics": {"m": {"scale": "ordinal", "levels": [0, 1, 2], "human_pass": 1}},
    "raters": {"r": {"family": "gpt"}},
    "judges": {
        "j": {
            "library": "deepeval",
            "metric": "faithfulness",
            "into": "m",
            "model": {"provider": "openai", "name": "gpt-4.1", "price": {"input_per_mtok": 1, "output_per_mtok": 2}},
            "settings": {"threshold": 0.5},
        }
    },
    "service": {"url": "http://127.0.0.1:9/ask", "answer": "a", "contexts": "c[*]"},
}
toml_scalars = (
    st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats()
    | st.text(max_size=20)
    | st.dates()
    | st.datetimes()
    | st.times()
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)


def put(config: dict, key: str, value) -> dict:
    config = copy.deepcopy(config)
    node = config
    *parents, last = key.split(".")
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    if value is None:
        node.pop(last, None)
    else:
        node[last] = value
    return config


def dump(value) -> str:
    """A TOML value (tomllib reads; nothing in the standard library writes it)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(dump(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {dump(v)}" for k, v in value.items()) + " }"
    return value.isoformat()


def to_toml(config: dict) -> str:
    return "\n".join(f"{json.dumps(k)} = {dump(v)}" for k, v in config.items()) + "\n"


@settings(
    max_examples=int(os.environ.get("ATTACK_EXAMPLES", 300)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(edits=st.lists(st.tuples(st.sampled_from(KEYS), st.none() | toml_values), min_size=1, max_size=3))
def test_any_toml_value_at_any_key_is_a_list_of_problems_or_a_campaign(tmp_path, edits):
    config = BASE
    for key, value in edits:
        config = put(config, key, value)  # None: the key taken out
    folder = tmp_path / "attacked"
    folder.mkdir(exist_ok=True)
    text = to_toml(config).replace("\x00", "")
    (folder / "campaign.toml").write_text(text, encoding="utf-8")
    (folder / "ratings.csv").write_text("case_id,metric,rater,rater_kind,value\nc1,m,h,human,1\n")
    try:
        parsed = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        parsed = None
    try:
        c = load_campaign(folder)
    except CampaignError as exc:
        assert exc.problems and all(p.file.startswith(str(folder)) for p in exc.problems), exc
        assert all(p.message for p in exc.problems)
        return
    assert parsed is not None and c.name == parsed["name"] and set(c.metrics) == set(parsed["metrics"])


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "[" * 5000 + "]" * 5000,
        "x = " + "{a = " * 3000 + "1" + "}" * 3000,
        "x = " + "[" * (MAX_NESTING + 2) + "]" * (MAX_NESTING + 2),
    ],
)
def test_a_deeply_nested_toml_is_a_clear_error(tmp_path, text):
    path = tmp_path / "campaign.toml"
    path.write_text('name = "deep"\n' + text + "\n")
    with pytest.raises(CampaignError, match="nested deeper than"):
        read_toml(path)
    (tmp_path / "ratings.csv").write_text("case_id,metric,rater,rater_kind,value\n")
    result = run_cli("validate", tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr and "nested deeper than" in result.stderr


def test_a_huge_toml_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "campaign.toml"
    path.write_text('name = "huge"\ndescription = "' + "x" * (5 * 2**20) + '"\n')
    with pytest.raises(CampaignError, match="more than the"):
        read_toml(path)


# ------------------------------------------------------------------------------------------ Label Studio
def test_a_label_studio_pull_after_a_metric_is_removed_keeps_its_labels_aside(campaign, server, tmp_path):
    """A pull after a metric left campaign.toml refused the whole export ("a result for 'relevance', which
    the interface does not have"), though the project still had the metric. Its labels are now read with
    the interface the project was read with before, kept (in the store and labelstudio_ratings.csv, set
    aside like the other exported ratings), counted and said, and back when it is declared again."""
    folder = campaign
    (folder / "campaign.toml").write_text(toml(server.url, relevance=False))
    tasks = json.loads(label_studio_export(tmp_path / "later.json").read_text())
    changed = {}
    for task in tasks:  # annotator 1 changed their labels of c1 and c2 since, on both metrics
        for annotation in task["annotations"]:
            if annotation["completed_by"] == 1 and task["data"]["case_id"] in ("c1", "c2"):
                annotation["updated_at"] = "2026-11-02T10:00:00Z"
                for result in annotation["result"]:
                    verdict = {"pass": "fail", "fail": "pass"}[result["value"]["choices"][0]]
                    result["value"]["choices"] = [verdict]
                    changed[(task["data"]["case_id"], result["from_name"])] = float(verdict == "pass")
    later = tmp_path / "later.json"
    later.write_text(json.dumps(tasks))
    pulled = run_cli("labelstudio", "pull", folder, "--file", later)
    assert pulled.returncode == 0, pulled.stderr
    said = pulled.stdout.replace("\n", " ")
    assert f"set aside: {2 * N} label(s) of relevance, no longer declared in campaign.toml" in said, said
    again = run_cli("labelstudio", "pull", folder, "--file", later, "--json")
    doc = json.loads(again.stdout)
    assert doc["set_aside"] == {"labels": 2 * N, "metrics": ["relevance"]} and doc["changed"] == 0
    c = load_campaign(folder)
    aside = [s for s in c.set_aside if Path(s.file).name == "labelstudio_ratings.csv"]
    assert len(aside) == 2 * N and {(s.metric, s.why) for s in aside} == {("relevance", "metric")}
    assert "relevance" not in set(c.ratings["metric"])
    humans = c.ratings[c.ratings["rater"] == "ls-user-1"].set_index(["case_id", "metric"])["value"]
    assert humans[("c1", "faithfulness")] == changed[("c1", "faithfulness")]  # the declared metric: as pulled
    assert run_cli("validate", folder).returncode == 0
    # declared again: every label is back, the changed ones with their new value
    (folder / "campaign.toml").write_text(toml(server.url))
    c = load_campaign(folder)
    humans = c.ratings[c.ratings["rater"] == "ls-user-1"].set_index(["case_id", "metric"])["value"]
    assert len(c.ratings[c.ratings["rater"].str.startswith("ls-user-")]) == 4 * N and not c.set_aside
    assert {k: humans[k] for k in changed} == changed


def test_a_result_of_a_metric_the_project_never_had_is_still_refused(campaign, server, tmp_path):
    folder = campaign
    tasks = json.loads(label_studio_export(tmp_path / "other.json").read_text())
    tasks[0]["annotations"][0]["result"].append(
        {"from_name": "tone", "to_name": "answer", "type": "choices", "value": {"choices": ["pass"]}}
    )
    (tmp_path / "other.json").write_text(json.dumps(tasks))
    before = exported_rows(folder)
    pulled = run_cli("labelstudio", "pull", folder, "--file", tmp_path / "other.json")
    assert pulled.returncode == 2 and "a result for 'tone', which the interface does not have" in pulled.stderr
    assert "campaign.toml does not declare 'tone'" in pulled.stderr
    assert exported_rows(folder) == before
