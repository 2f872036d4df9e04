"""Names never become paths unchecked: a judge's or a sample's name is kept as one file or folder name
inside the campaign, or refused where it is declared (campaign.toml, the command line) naming the rule;
a symbolic link planted in the campaign never leads a write elsewhere.

The reproductions (a judge named "../../x" whose fingerprint wrote anchors, a stamp and a scratch store
outside the campaign; ``sample --name ../../x``; a link in place of samples/) run the command line as a
user would and look at every file outside the campaign afterwards."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate.cli import main
from tests.conftest import run_cli, write_campaign

EXAMPLES = int(os.environ.get("ATTACK_EXAMPLES", 300))


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"calibrate {' '.join(map(str, args))}: a traceback") from result.exception
    return result


def tree(folder: Path, *, leaving_out: Path | None = None) -> set[str]:
    """Every file and folder under ``folder`` (those under ``leaving_out`` aside)."""
    return {
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if leaving_out is None or not (p == leaving_out or leaving_out in p.parents)
    }


# ---- the rule -------------------------------------------------------------------------------------------

KEPT = [
    "faithfulness-gpt-4.1",
    "judge_a",
    "llama3:8b",
    "ann@example.com",
    "a+b",
    "pilot 2",
    "fidélité",
    "判定",
    "x" * 100,
    "random-0",
    "v1.2",
    "-dash",
]
REFUSED = {
    "": "empty",
    ".": "'.'",
    "..": "'..'",
    "../../x": "'/'",
    "a/b": "'/'",
    "a\\b": "'\\\\'",
    "a\x00b": "U+0000",
    "a\nb": "U+000A",
    "\x1b[31mred": "U+001B",
    "\u202eevil": "U+202E",
    ".hidden": "starts with '.'",
    " lead": "space",
    "trail ": "space",
    "x" * 101: "101 characters",
    "é" * 101: "101 characters",
    "😀" * 51: "bytes",
    "a*b": "'*'",
    "a|b": "'|'",
    "<x>": "'<'",
    "a\u200bb": "U+200B",
    "\u0301a": "combining mark",
}


@pytest.mark.parametrize("name", KEPT)
def test_a_name_a_person_would_choose_is_kept_as_it_is(name, tmp_path):
    from calibrate.base.names import inside, path_component

    assert path_component(name, what="judge name") == name
    made = inside(tmp_path, "fingerprints", name)
    made.mkdir(parents=True)
    assert made.parent == tmp_path / "fingerprints" and made.name == name


@pytest.mark.parametrize("name, why", REFUSED.items())
def test_a_name_that_could_leave_the_folder_or_mislead_is_refused_naming_the_rule(name, why):
    from calibrate.base.names import RULE, UnsafeName, path_component

    with pytest.raises(UnsafeName) as caught:
        path_component(name, what="judge name")
    message = str(caught.value)
    assert message.startswith(f"judge name {name!r} cannot be a file or folder name: ") and why in message
    assert message.endswith(RULE)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    name=st.text(min_size=0, max_size=120)
    | st.text(st.sampled_from("./\\.x \x00:@"), max_size=12)
    | st.sampled_from(["..", ".", "../..", "/etc", "~", "$HOME", "x/..", "..\\..", "\u2215", "\uff0f"])
)
def test_any_text_is_a_folder_inside_the_campaign_or_a_clear_refusal(tmp_path_factory, name):
    """Any text as a judge's name: either it is kept, and the folder made of it is a child of
    fingerprints/ (nothing else appears anywhere), or it is refused with the rule; never a path outside."""
    from calibrate.base.names import RULE, UnsafeName, inside, path_component

    root = tmp_path_factory.mktemp("n")
    campaign = root / "campaign"
    campaign.mkdir()
    try:
        kept = path_component(name, what="judge name")
    except UnsafeName as exc:
        assert str(exc).endswith(RULE) and repr(name) in str(exc)
        return
    assert kept == name
    folder = inside(campaign, "fingerprints", kept)
    folder.mkdir(parents=True)
    (folder / "anchors.json").write_text("{}")
    assert os.path.realpath(folder) == os.path.join(os.path.realpath(campaign), "fingerprints", name)
    assert tree(root) == {
        "campaign",
        "campaign/fingerprints",
        f"campaign/fingerprints/{name}",
        f"campaign/fingerprints/{name}/anchors.json",
    }


def test_a_symbolic_link_in_the_campaign_never_leads_a_path_outside(tmp_path):
    from calibrate.base.names import OutsideFolder, inside

    campaign, elsewhere = tmp_path / "campaign", tmp_path / "elsewhere"
    campaign.mkdir()
    elsewhere.mkdir()
    (campaign / "samples").symlink_to(elsewhere)
    (campaign / "judge_runs").mkdir()
    (campaign / "judge_runs" / "run.json").symlink_to(elsewhere / "run.json")
    for parts in (("samples", "random-0.csv"), ("judge_runs", "run.json")):
        with pytest.raises(OutsideFolder, match="leads outside the campaign folder"):
            inside(campaign, *parts)
    # a campaign folder that is itself a link is fine: what matters is where its files lead
    link = tmp_path / "link"
    link.symlink_to(campaign)
    assert inside(link, "fingerprints", "j") == link / "fingerprints" / "j"


# ---- where names are declared: campaign.toml --------------------------------------------------------------


def judge_campaign(folder: Path, judge: str, url: str, *, dag: str | None = None) -> Path:
    n = 8
    cases = [
        {
            "case_id": f"c{i}",
            "input": f"question {i}?",
            "actual_output": f"Fact {i} is true.",
            "retrieval_context": [f"Fact {i} is true."],
        }
        for i in range(n)
    ]
    ratings = pd.DataFrame(
        {
            "case_id": [c["case_id"] for c in cases] * 2,
            "metric": "faithfulness",
            "rater": ["ann"] * n + [judge] * n,
            "rater_kind": ["human"] * n + ["judge"] * n,
            "value": [i % 2 for i in range(n)] + [0.2 + 0.6 * (i % 2) for i in range(n)],
        }
    )
    settings = f"\nsettings = {{ dag = {json.dumps(dag)} }}" if dag else ""
    metric = "dag" if dag else "faithfulness"
    toml = f'''name = "names"
[metrics.faithfulness]
scale = "binary"
[judges.{json.dumps(judge)}]
library = "deepeval"
metric = "{metric}"
into = "faithfulness"
model = {{ provider = "openai", name = "careful", base_url = "{url}" }}{settings}
'''
    return write_campaign(folder, toml, ratings, cases)


def test_a_judge_named_like_a_path_is_refused_and_its_fingerprint_writes_nothing_outside(tmp_path):
    """The issue's example: [judges."../../x"] was accepted, and calibrate fingerprint wrote anchors, a stamp
    and a scratch store two folders up, outside the campaign."""
    from tests.servers.judge_server import JudgeServer

    with JudgeServer(models={"careful"}) as server:
        campaign = judge_campaign(tmp_path / "a" / "campaign", "../../x", server.url)
        before = tree(tmp_path, leaving_out=campaign)
        validated = invoke("validate", campaign)
        assert validated.exit_code == 2
        assert "judges.../../x" in validated.stderr and "cannot be a folder name" in validated.stderr
        assert "not starting with '.'" in validated.stderr  # the rule, named
        fingerprint = run_cli(
            "fingerprint",
            campaign,
            "--judge",
            "../../x",
            "--anchors",
            "4",
            "--repeats",
            "2",
            "--threshold",
            "0.5",
            env={"OPENAI_API_KEY": "sk-test"},
        )
        assert fingerprint.returncode == 2, fingerprint.stderr
        assert "cannot be a folder name" in fingerprint.stderr and "Traceback" not in fingerprint.stderr
        assert tree(tmp_path, leaving_out=campaign) == before  # nothing outside the campaign
        assert not (campaign / "fingerprints").exists()


def test_judges_whose_names_differ_only_by_case_would_share_a_folder(tmp_path):
    campaign = judge_campaign(tmp_path / "campaign", "Judge", "http://127.0.0.1:9")
    toml = (campaign / "campaign.toml").read_text()
    (campaign / "campaign.toml").write_text(toml + toml[toml.index("[judges.") :].replace('"Judge"', '"judge"'))
    validated = invoke("validate", campaign)
    assert validated.exit_code == 2 and "differs from the judge 'Judge' only by case" in validated.stderr


@pytest.mark.parametrize("dag", ["../outside.json", "/etc/hostname", "dags/../../outside.json"])
def test_a_dag_file_outside_the_campaign_is_refused_never_read(tmp_path, dag):
    from tests.judges.test_judges_dag import write_dag

    write_dag(tmp_path / "outside.json")  # a tree DeepEval wrote: read, it would be accepted
    campaign = judge_campaign(tmp_path / "campaign", "j", "http://127.0.0.1:9", dag=dag)
    validated = invoke("validate", campaign)
    assert validated.exit_code == 2 and "the DAG file must be inside the campaign folder" in validated.stderr


def test_a_planted_fingerprint_outside_the_campaign_is_never_read(tmp_path):
    """A rater named like a path (imported, not declared) has no fingerprint, whatever lies where its name
    points: the gate cannot be passed by a SAME planted in another folder."""
    from calibrate import load_campaign
    from calibrate.review.fingerprint import latest_fingerprint

    campaign = write_campaign(
        tmp_path / "a" / "campaign",
        'name = "c"\n[metrics.f]\nscale = "binary"\n',
        "case_id,metric,rater,rater_kind,value\nc1,f,ann,human,1\nc1,f,../../x,judge,0.9\n",
    )
    (campaign / "fingerprints" / "another-judge").mkdir(parents=True)  # a campaign that has fingerprints
    planted = tmp_path / "a" / "x"
    planted.mkdir(parents=True)
    (planted / "29990101T000000Z.json").write_text(json.dumps({"verdict": "SAME", "created": "2999-01-01"}))
    assert latest_fingerprint(load_campaign(campaign), "../../x") is None


# ---- where names are declared: the command line -----------------------------------------------------------


@pytest.fixture
def demo(tmp_path) -> Path:
    from calibrate.demo import demo_campaign_path

    return Path(shutil.copytree(demo_campaign_path(), tmp_path / "demo"))


def test_sample_name_like_a_path_is_a_usage_error_writing_nothing_outside(demo, tmp_path):
    """The issue's example: sample --name ../../x wrote x.csv and x.json outside the campaign."""
    before = tree(tmp_path, leaving_out=demo)
    result = invoke("sample", demo, "--n", 5, "--include-labelled", "--name", "../../x")
    assert result.exit_code == 2
    assert "Invalid value for '--name'" in result.stderr and "cannot be a file or folder name" in result.stderr
    assert tree(tmp_path, leaving_out=demo) == before and not (demo / "samples").exists()


def test_sample_cases_refuses_the_name_before_drawing(demo):
    from calibrate import load_campaign, sample_cases
    from calibrate.base.names import UnsafeName

    for name in ("../../x", "a/b", ".hidden", "x\ny"):
        with pytest.raises(UnsafeName, match="sample name"):
            sample_cases(load_campaign(demo), 5, name=name)
    assert not (demo / "samples").exists()


def test_a_link_in_place_of_samples_never_takes_a_sample_elsewhere(demo, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (demo / "samples").symlink_to(elsewhere)
    result = invoke("sample", demo, "--n", 5, "--name", "pilot", "--include-labelled")
    assert result.exit_code == 2 and "leads outside the campaign folder" in result.stderr
    assert list(elsewhere.iterdir()) == []


# ---- links planted in a campaign (a pull request can add them) --------------------------------------------------


def campaign_with_labels(folder: Path) -> Path:
    ratings = pd.DataFrame(
        {
            "case_id": ["c1", "c1", "c2", "c2"],
            "metric": "f",
            "rater": ["ann", "bob"] * 2,
            "rater_kind": "human",
            "value": [1, 0, 1, 1],
        }
    )
    return write_campaign(
        folder,
        'name = "c"\n[metrics.f]\nscale = "binary"\n',
        ratings,
        [{"case_id": "c1", "input": "q1?"}, {"case_id": "c2", "input": "q2?"}],
    )


@pytest.mark.parametrize(
    "planted, command",
    [
        ("cases.jsonl.tmp", ["cases", "import", "{campaign}", "{tmp}/goldens.jsonl"]),
        (".calibrate.lock", ["cases", "import", "{campaign}", "{tmp}/goldens.jsonl"]),
        ("imports.sqlite", ["import", "deepeval", "{campaign}", "{tmp}/run.json"]),
        ("imports.sqlite.tmp", ["import", "deepeval", "{campaign}", "{tmp}/run.json"]),
        ("imported_ratings.csv.tmp", ["import", "deepeval", "{campaign}", "{tmp}/run.json"]),
        ("adjudications.sqlite", ["adjudicate", "{campaign}", "--decisions", "{tmp}/decisions.csv"]),
        ("adjudications.sqlite-wal", ["adjudicate", "{campaign}", "--decisions", "{tmp}/decisions.csv"]),
        ("adjudications.csv.tmp", ["adjudicate", "{campaign}", "--decisions", "{tmp}/decisions.csv"]),
    ],
)
def test_a_link_planted_in_the_campaign_is_never_written_through(tmp_path, planted, command):
    """A link named like a file calibrate writes (the file itself, its .tmp, its store, the lock) that
    points at a file of the user's elsewhere: the write never reaches that file."""
    import sqlite3

    campaign = campaign_with_labels(tmp_path / "campaign")
    victim = tmp_path / "victim"
    if planted.endswith(".sqlite"):  # another campaign's store
        db = sqlite3.connect(victim)
        db.execute("CREATE TABLE other (x)")
        db.close()
    else:
        victim.write_text("the user's own file\n")
    before = victim.read_bytes()
    (tmp_path / "goldens.jsonl").write_text(json.dumps({"input": "new?", "actual_output": "a."}) + "\n")
    (tmp_path / "run.json").write_text(
        json.dumps(
            {"testCases": [{"input": "q1?", "metricsData": [{"name": "f", "score": 1.0, "evaluationModel": "gpt"}]}]}
        )
    )
    (tmp_path / "decisions.csv").write_text("case_id,metric,decision,adjudicator\nc1,f,1,ada\n")
    (campaign / planted).symlink_to(victim)
    result = invoke(*[a.format(campaign=campaign, tmp=tmp_path) for a in command])
    assert result.exit_code in (0, 2), result.output
    assert victim.read_bytes() == before
    if result.exit_code == 2:
        assert "symbolic link" in result.stderr and "remove" in result.stderr, result.stderr


@settings(
    max_examples=int(os.environ.get("ATTACK_EXAMPLES", 40)) // 4 + 10,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(name=st.text(min_size=1, max_size=40) | st.sampled_from(["../x", "..", ".", "a/../../b", "~/x", "x\x00", "-"]))
def test_sample_name_attack_lands_in_samples_or_is_a_usage_error(tmp_path_factory, name):
    root = tmp_path_factory.mktemp("s")
    campaign = campaign_with_labels(root / "campaign")
    before = tree(root, leaving_out=campaign)
    result = invoke("sample", campaign, "--n", 1, "--include-labelled", "--name", name)
    assert tree(root, leaving_out=campaign) == before
    if result.exit_code == 0:
        assert sorted(p.name for p in (campaign / "samples").iterdir()) == [f"{name}.csv", f"{name}.json"]
    else:
        assert result.exit_code == 2 and "Invalid value for '--name'" in result.stderr, result.output
