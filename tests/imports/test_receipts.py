"""An import loads the campaign once, and the same file imported again into a campaign as its import left
it does nothing (calibrate/imports/receipts.py, import_files in calibrate/imports/apply.py): nothing read,
nothing written, nothing lost; anything changed since, and the import runs in full as it always did."""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest
from click.testing import CliRunner

import calibrate
from calibrate.campaign.load import load_campaign as real_load_campaign
from calibrate.cli import main
from calibrate.imports import deepeval_runs
from calibrate.imports.apply import import_batch
from calibrate.imports.deepeval_runs import import_deepeval_run


def deepeval_case(i, score=1.0, model="gpt-4o"):
    return {
        "name": f"question-{i}",
        "input": f"q{i}?",
        "actualOutput": f"a{i}.",
        "metricsData": [{"name": "Faithfulness", "score": score, "threshold": 0.5, "evaluationModel": model}],
    }


def write_run(path, scores, model="gpt-4o"):
    path.write_text(json.dumps({"testCases": [deepeval_case(i, s, model) for i, s in enumerate(scores)]}))
    return path


@pytest.fixture
def campaign(tmp_path):
    calibrate.init_campaign(tmp_path / "c", ["faithfulness"])
    return tmp_path / "c"


def everything(folder):
    """Every file of the campaign, byte for byte (the store's rows apart), and every row of the store."""
    files = {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith("imports.sqlite") and p.name != ".calibrate.lock"
    }
    db = sqlite3.connect(folder / "imports.sqlite")
    try:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        rows = {t: db.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall() for t in tables}
    finally:
        db.close()
    return files, rows


@pytest.fixture
def reads(monkeypatch):
    """How many times a DeepEval test run is read through its format."""
    calls = []
    real = deepeval_runs.read_deepeval_run

    def counted(path):
        calls.append(path)
        return real(path)

    monkeypatch.setattr(deepeval_runs, "read_deepeval_run", counted)
    return calls


@pytest.fixture
def loads(monkeypatch):
    """Every load of a campaign, wherever load_campaign was imported from (the folders it loaded)."""
    calls = []

    def counted(path, **kw):
        calls.append(path)
        return real_load_campaign(path, **kw)

    for module in list(sys.modules.values()):
        if getattr(module, "load_campaign", None) is real_load_campaign and module.__name__.startswith("calibrate"):
            monkeypatch.setattr(module, "load_campaign", counted)
    return calls


def test_an_unchanged_reimport_does_nothing_and_keeps_everything(campaign, tmp_path, reads):
    run = write_run(tmp_path / "run.json", [1.0, 0.0, 0.5])
    first = import_deepeval_run(campaign, run)
    assert first["ratings"]["new"] == 3 and first["unchanged_since"] is None and len(reads) == 1
    before = everything(campaign)
    again = import_deepeval_run(campaign, run)
    assert len(reads) == 1  # not even read
    assert everything(campaign) == before  # no file, no store row, touched
    assert again["unchanged_since"] == first["import_id"] and again["import_id"] is None
    assert again["ratings"] == {**first["ratings"], "new": 0, "unchanged": 3}
    assert again["cases"] == {"added": 0, "unchanged": 3, "completed": 0} and again["files"] == []
    assert (again["by_metric"], again["raters"], again["skipped"]) == (
        first["by_metric"],
        first["raters"],
        first["skipped"],
    )
    # what a full import of the same gives, but for what it wrote and when
    full = import_batch(campaign, deepeval_runs.read_deepeval_run(run))
    same = ("import_id", "unchanged_since", "files")
    assert {k: v for k, v in full.items() if k not in same} == {k: v for k, v in again.items() if k not in same}
    assert everything(campaign)[0] == before[0]
    values = real_load_campaign(campaign).ratings.sort_values("case_id")["value"].tolist()
    assert values == [1.0, 0.0, 0.5]


def test_a_dry_run_of_an_unchanged_file_says_so(campaign, tmp_path, reads):
    run = write_run(tmp_path / "run.json", [1.0])
    import_deepeval_run(campaign, run)
    before = everything(campaign)
    doc = import_deepeval_run(campaign, run, dry_run=True)
    assert doc["dry_run"] and doc["unchanged_since"] and len(reads) == 1 and everything(campaign) == before


@pytest.mark.parametrize(
    "change",
    [
        "user's rating",  # a rating added to the user's own ratings.csv
        "imported edited",  # imported_ratings.csv edited by hand: the import writes it again from the store
        "imported deleted",
        "cases edited",  # a case the import brought, removed from cases.jsonl: it comes back
        "metric declared",
        "file changed",  # a score changed in the test run: a new revision
        "other options",  # another --rater: another import
    ],
)
def test_anything_changed_since_and_the_import_runs_in_full(campaign, tmp_path, reads, change):
    run = write_run(tmp_path / "run.json", [1.0, 0.0])
    import_deepeval_run(campaign, run)
    imported = campaign / "imported_ratings.csv"
    rater = None
    if change == "user's rating":
        with (campaign / "ratings.csv").open("a") as handle:
            handle.write("question-0,faithfulness,alice,human,1,,,\n")
    elif change == "imported edited":
        imported.write_text(imported.read_text().replace("gpt-4o,judge,1.0", "gpt-4o,judge,0.0"))
    elif change == "imported deleted":
        imported.unlink()
    elif change == "cases edited":
        lines = (campaign / "cases.jsonl").read_text().splitlines(keepends=True)
        (campaign / "cases.jsonl").write_text(lines[0])
    elif change == "metric declared":
        with (campaign / "campaign.toml").open("a") as handle:
            handle.write('\n[metrics.tone]\nscale = "binary"\nhuman_pass = 1\nmax_false_pass = 0.1\n')
    elif change == "file changed":
        write_run(run, [1.0, 1.0])
    else:
        rater = "careful"
    doc = import_deepeval_run(campaign, run, rater=rater)
    assert doc["unchanged_since"] is None and len(reads) == 2  # read and imported again
    c = real_load_campaign(campaign)
    judged = c.ratings[c.ratings["rater_kind"] == "judge"].sort_values(["rater", "case_id"])
    expected = {
        "file changed": [1.0, 1.0],
        "other options": [1.0, 0.0, 1.0, 0.0],  # careful's and gpt-4o's
    }.get(change, [1.0, 0.0])
    assert judged["value"].tolist() == expected  # the store's values: a hand edit of its export is not kept
    assert len(c.cases) == 2
    if change == "user's rating":  # what the user gave stays
        assert c.ratings[c.ratings["rater"] == "alice"]["value"].tolist() == [1.0]
    assert doc["ratings"]["changed"] == (1 if change == "file changed" else 0)
    # and now nothing has changed: the next import does nothing
    assert import_deepeval_run(campaign, run, rater=rater)["unchanged_since"] == doc["import_id"]
    assert len(reads) == 2


def test_a_conflict_is_still_refused_naming_the_other_file(campaign, tmp_path):
    with (campaign / "ratings.csv").open("a") as handle:  # the user gives gpt-4o's rating of the case already
        handle.write("question-0,faithfulness,gpt-4o,judge,1,,,\n")
    before = everything_but_the_store(campaign)
    with pytest.raises(calibrate.CampaignError, match=r"already rates case 'question-0'.*ratings\.csv"):
        import_deepeval_run(campaign, write_run(tmp_path / "run.json", [0.0]))
    assert everything_but_the_store(campaign) == before and not (campaign / "imports.sqlite").exists()


def everything_but_the_store(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_each_import_command_loads_the_campaign_once(campaign, tmp_path, loads):
    run = write_run(tmp_path / "run.json", [1.0, 0.0])
    invoke("import", "deepeval", campaign, run, "--dry-run")
    assert len(loads) == 1, loads
    invoke("import", "deepeval", campaign, run)  # the first import
    assert len(loads) == 2, loads
    write_run(run, [1.0, 1.0])
    assert "1 changed" in invoke("import", "deepeval", campaign, run, "--map", "Faithfulness=faithfulness")
    assert len(loads) == 3, loads  # a re-import of a changed file: once too
    assert "unchanged, nothing to do" in invoke(
        "import", "deepeval", campaign, run, "--map", "Faithfulness=faithfulness"
    )
    assert len(loads) == 3, loads  # unchanged: not at all
    ragas = tmp_path / "result.csv"
    ragas.write_text("user_input,response,faithfulness\nq?,a.,0.5\n")
    invoke("import", "ragas", campaign, ragas, "--rater", "ragas-judge")
    assert len(loads) == 4, loads


def test_a_refused_import_loads_the_campaign_as_it_was_to_say_why(campaign, tmp_path, loads):
    with (campaign / "ratings.csv").open("a") as handle:
        handle.write("question-0,faithfulness,gpt-4o,judge,1,,,\n")
    result = CliRunner().invoke(main, ["import", "deepeval", str(campaign), str(write_run(tmp_path / "o.json", [0.0]))])
    assert result.exit_code == 2 and "already rates case" in result.output
    assert len(loads) == 2  # as the import would leave it (it would not load), then as it is, to say why
