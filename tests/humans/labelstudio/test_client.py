"""Label Studio: the generated interface, push and pull against a real server on 127.0.0.1."""

import json

import pandas as pd
import pytest

from calibrate import compute_stats, load_campaign
from calibrate.humans.labelstudio.client import LabelStudioError, pull, pull_file, push
from calibrate.humans.labelstudio.labels import LabelError
from calibrate.humans.labelstudio.store import RATINGS_FILE, STORE_NAME, LabelStore
from tests.conftest import write_campaign

TOML = """
name = "ls-campaign"
[metrics.faithfulness]
scale = "binary"
[metrics.contextual_precision]
scale = "continuous"
range = [0, 1]
human_pass = 0.5
[metrics.politeness]
scale = "ordinal"
levels = [0, 1, 2]
human_pass = 1
description = "Is the answer polite?"
"""


def cases(n: int) -> list[dict]:
    return [
        {
            "case_id": f"c{i:04d}",
            "input": f"Where is city {i}?",
            "actual_output": f"City {i} is in country {i}.",
            "expected_output": f"City {i} is in country {i}.",
            "retrieval_context": [f"Noise {i}.", f"City {i} is in country {i}.", f"More noise {i}."],
        }
        for i in range(n)
    ]


def make_campaign(tmp_path, n=4):
    humans = pd.DataFrame(
        {"case_id": ["c0000"], "metric": "faithfulness", "rater": "lead", "rater_kind": "human", "value": [1]}
    )
    return write_campaign(tmp_path / "campaign", TOML, humans, cases(n))


@pytest.fixture(scope="module")
def server(label_studio):
    from label_studio_sdk import LabelStudio

    url, token = label_studio.url, label_studio.token
    client = LabelStudio(base_url=url, api_key=token)
    users = {}
    for name in ("ann1", "ann2", "adj"):
        email = f"{name}@calibrate.test"
        found = [u for u in client.users.list() if u.email == email]
        users[name] = (
            found[0].id
            if found
            else client.users.create(email=email, username=name, password=f"{name}-password-123").id
        )
    return url, token, client, users


def results(faithful: str, chunks: list[str], polite: str) -> list[dict]:
    out = [
        {"from_name": "faithfulness", "to_name": "answer", "type": "choices", "value": {"choices": [faithful]}},
        {"from_name": "politeness", "to_name": "answer", "type": "choices", "value": {"choices": [polite]}},
    ]
    out += [
        {
            "from_name": f"contextual_precision__chunk_{i}",
            "to_name": f"contextual_precision__chunk_text_{i}",
            "type": "choices",
            "value": {"choices": [answer]},
        }
        for i, answer in enumerate(chunks)
    ]
    return out


def tasks_by_case(client, project_id):
    return {t.data["case_id"]: t.id for t in client.tasks.list(project=project_id)}


def test_push_pull_revisions_and_no_duplicates(tmp_path, server):
    url, token, client, users = server
    folder = make_campaign(tmp_path)
    first = push(load_campaign(folder), url=url, api_key=token)
    assert first["created"] and first["tasks_added"] == 4
    project = client.projects.get(first["project_id"])
    assert "contextual_precision__chunk_{{idx}}" in project.label_config and project.show_instruction
    # the guidelines as HTML, each worded for its metric's scale (they were Markdown source in a <pre>)
    instructions = project.expert_instruction
    assert "<pre" not in instructions and "**" not in instructions and "<strong>pass</strong>" in instructions
    assert "<h3>Politeness: Is the answer polite?</h3>" in instructions and "<strong>2</strong>" in instructions
    again = push(load_campaign(folder), url=url, api_key=token)  # idempotent: nothing added twice
    assert not again["created"] and again["tasks_added"] == 0 and again["project_id"] == first["project_id"]
    tasks = tasks_by_case(client, first["project_id"])
    assert len(tasks) == 4

    mark = {
        "from_name": "faithfulness__unsupported",
        "to_name": "answer",
        "type": "labels",
        "value": {"start": 0, "end": 6, "text": "City 1", "labels": ["unsupported"]},
    }
    client.annotations.create(
        id=tasks["c0000"],
        completed_by=users["ann1"],
        result=results("pass", ["not relevant", "relevant", "not relevant"], "2"),
    )
    client.annotations.create(
        id=tasks["c0000"],
        completed_by=users["ann2"],
        result=results("fail", ["relevant", "relevant", "not relevant"], "1"),
    )
    changing = client.annotations.create(
        id=tasks["c0001"],
        completed_by=users["ann1"],
        result=results("fail", ["relevant", "not relevant", "relevant"], "0") + [mark],
    )
    client.annotations.create(id=tasks["c0002"], completed_by=users["ann2"], was_cancelled=True, result=[])

    summary = pull(load_campaign(folder), url=url, api_key=token)
    assert (summary["annotations"], summary["cancelled"], summary["labels"], summary["new"]) == (3, 1, 9, 9)
    ratings = pd.read_csv(folder / RATINGS_FILE)
    got = {(r.case_id, r.metric, r.rater): r.value for r in ratings.itertuples()}
    assert got == {
        ("c0000", "faithfulness", "ann1@calibrate.test"): 1.0,
        ("c0000", "faithfulness", "ann2@calibrate.test"): 0.0,
        ("c0000", "politeness", "ann1@calibrate.test"): 2.0,
        ("c0000", "politeness", "ann2@calibrate.test"): 1.0,
        # average precision of the relevant chunks in rank order
        ("c0000", "contextual_precision", "ann1@calibrate.test"): 0.5,
        ("c0000", "contextual_precision", "ann2@calibrate.test"): 1.0,
        ("c0001", "faithfulness", "ann1@calibrate.test"): 0.0,
        ("c0001", "politeness", "ann1@calibrate.test"): 0.0,
        ("c0001", "contextual_precision", "ann1@calibrate.test"): pytest.approx((1 + 2 / 3) / 2),
    }
    store = LabelStore(folder)
    details = {(h["case_id"], h["metric"]): h["details"] for h in store.history("c0001")}
    assert details[("c0001", "faithfulness")] == {"unsupported_spans": [{"start": 0, "end": 6, "text": "City 1"}]}
    assert details[("c0001", "contextual_precision")] == {"chunks": ["relevant", "not relevant", "relevant"]}

    # the campaign reads the pulled labels beside the user's own file; statistics run on them
    campaign = load_campaign(folder)
    assert set(campaign.ratings.loc[campaign.ratings["rater_kind"] == "human", "rater"]) == {
        "lead",
        "ann1@calibrate.test",
        "ann2@calibrate.test",
    }
    assert compute_stats(campaign, n_boot=20)["metrics"]

    # a changed label becomes a new revision; the earlier one is kept
    client.annotations.update(id=changing.id, result=results("pass", ["relevant", "not relevant", "relevant"], "0"))
    second = pull(load_campaign(folder), url=url, api_key=token)
    assert (second["new"], second["changed"], second["unchanged"]) == (0, 1, 8)  # faithfulness (with its spans)
    revisions = [(h["value"], h["details"]) for h in store.history("c0001") if h["metric"] == "faithfulness"]
    assert revisions == [(0.0, {"unsupported_spans": [{"start": 0, "end": 6, "text": "City 1"}]}), (1.0, None)]
    ratings = pd.read_csv(folder / RATINGS_FILE)
    assert ratings.query("case_id == 'c0001' and metric == 'faithfulness'")["value"].tolist() == [1.0]
    store.close()

    # a case added to the campaign: pushing again adds that one only
    more = cases(5)
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in more))
    assert push(load_campaign(folder), url=url, api_key=token)["tasks_added"] == 1
    assert len(tasks_by_case(client, first["project_id"])) == 5

    # the same labels from an export file, for users without API access
    export = tmp_path / "export.json"
    export.write_bytes(
        b"".join(
            client.projects.exports.download_sync(first["project_id"], export_type="JSON", download_all_tasks=True)
        )
    )
    other = make_campaign(tmp_path / "other", n=5)
    from_file = pull_file(load_campaign(other), export)
    assert from_file["labels"] == 9 and from_file["cancelled"] == 1
    assert len(pd.read_csv(other / RATINGS_FILE)) == 9
    assert set(pd.read_csv(other / RATINGS_FILE)["rater"]) == {f"ls-user-{users['ann1']}", f"ls-user-{users['ann2']}"}

    # the key is never written to disk
    for path in folder.rglob("*"):
        assert path.is_dir() or token.encode() not in path.read_bytes(), path


def test_a_result_outside_the_interface_is_an_error_naming_task_and_annotator(tmp_path, server):
    url, token, client, users = server
    folder = make_campaign(tmp_path, n=2)
    project_id = push(load_campaign(folder), url=url, api_key=token)["project_id"]
    tasks = tasks_by_case(client, project_id)
    client.annotations.create(
        id=tasks["c0000"],
        completed_by=users["ann1"],
        result=results("maybe", ["relevant", "relevant", "relevant"], "1"),
    )
    client.annotations.create(
        id=tasks["c0001"],
        completed_by=users["ann2"],
        result=results("pass", ["relevant", "relevant"], "1")
        + [{"from_name": "bogus", "to_name": "answer", "type": "choices", "value": {"choices": ["x"]}}],
    )
    with pytest.raises(LabelError) as raised:
        pull(load_campaign(folder), url=url, api_key=token)
    text = str(raised.value)
    assert f"task {tasks['c0000']} (case c0000), annotator ann1@calibrate.test: faithfulness chose ['maybe']" in text
    assert f"task {tasks['c0001']} (case c0001), annotator ann2@calibrate.test: a result for 'bogus'" in text
    assert "contextual_precision leaves item(s) 3 of 3 unanswered" in text
    assert not (folder / RATINGS_FILE).exists() and not LabelStore(folder).history()


def test_connection_settings_are_required(tmp_path):
    folder = make_campaign(tmp_path, n=1)
    with pytest.raises(LabelStudioError, match="LABEL_STUDIO_URL"):
        push(load_campaign(folder), url=None, api_key="x")
    with pytest.raises(LabelStudioError, match="LABEL_STUDIO_API_KEY"):
        push(load_campaign(folder), url="http://127.0.0.1:1", api_key=None)
    assert not (folder / STORE_NAME).exists()


@pytest.mark.slow
def test_a_thousand_tasks_through_the_command_line(tmp_path, server, monkeypatch):
    import subprocess
    import sys
    import time
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    url, token, client, users = server
    folder = make_campaign(tmp_path, n=1000)
    monkeypatch.setenv("LABEL_STUDIO_URL", url)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", token)
    calibrate = Path(sys.executable).parent / "calibrate"
    start = time.perf_counter()
    pushed = subprocess.run(
        [str(calibrate), "labelstudio", "push", str(folder), "--overlap", "0.2", "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pushed.returncode == 0, pushed.stderr
    doc = json.loads(pushed.stdout)
    assert doc["tasks_added"] == 1000 and doc["overlap"] == 0.2
    project = client.projects.get(doc["project_id"])
    assert (project.maximum_annotations, project.overlap_cohort_percentage) == (2, 20)
    tasks = tasks_by_case(client, doc["project_id"])
    assert len(tasks) == 1000
    push_seconds = time.perf_counter() - start

    def annotate(item):
        i, (_case_id, task_id) = item
        client.annotations.create(
            id=task_id,
            completed_by=users["ann1" if i % 2 else "ann2"],
            result=results("pass" if i % 3 else "fail", ["relevant"] * 3, str(i % 3)),
        )

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(annotate, enumerate(sorted(tasks.items()))))
    start = time.perf_counter()
    pulled = subprocess.run(
        [str(calibrate), "labelstudio", "pull", str(folder)], capture_output=True, text=True, timeout=600
    )
    assert pulled.returncode == 0, pulled.stderr
    assert "1000 annotation(s) of 1000 task(s): 3000 label(s), 3000 new" in pulled.stdout
    ratings = pd.read_csv(folder / RATINGS_FILE)
    assert len(ratings) == 3000 and ratings.query("metric == 'faithfulness'")["value"].sum() == sum(
        1 for i in range(1000) if i % 3
    )
    print(f"push {push_seconds:.1f} s, pull {time.perf_counter() - start:.1f} s")


def test_a_personal_access_token_works_too(tmp_path, server):
    import httpx

    url, token, client, users = server
    legacy = {"Authorization": f"Token {token}"}
    assert (
        httpx.post(
            url + "/api/jwt/settings",
            headers=legacy,
            json={"api_tokens_enabled": True, "legacy_api_tokens_enabled": True},
        ).status_code
        == 200
    )
    pat = httpx.post(url + "/api/token/", headers=legacy).json()["token"]  # a JWT refresh token
    assert pat.count(".") == 2
    folder = make_campaign(tmp_path, n=2)
    doc = push(load_campaign(folder), url=url, api_key=pat)
    tasks = tasks_by_case(client, doc["project_id"])
    client.annotations.create(
        id=tasks["c0000"], completed_by=users["ann1"], result=results("pass", ["relevant", "relevant", "relevant"], "2")
    )
    assert pull(load_campaign(folder), url=url, api_key=pat)["labels"] == 3
    for path in folder.rglob("*"):
        assert path.is_dir() or pat.encode() not in path.read_bytes(), path


def test_judge_scores_shown_as_pre_annotations_are_warned_of(tmp_path, server):
    url, token, client, users = server
    folder = make_campaign(tmp_path, n=3)
    judged = pd.DataFrame(
        {
            "case_id": ["c0000", "c0001", "c0002"],
            "metric": "faithfulness",
            "rater": "judge-x",
            "rater_kind": "judge",
            "value": [0.9, 0.2, 0.5],
        }
    )
    pd.concat([pd.read_csv(folder / "ratings.csv"), judged]).to_csv(folder / "ratings.csv", index=False)
    (folder / "campaign.toml").write_text(TOML + '[raters.judge-x]\nfamily = "gpt"\n')
    blind = push(load_campaign(folder), url=url, api_key=token)
    assert blind["shown_judge"] is None
    other = make_campaign(tmp_path / "shown", n=3)
    pd.concat([pd.read_csv(other / "ratings.csv"), judged]).to_csv(other / "ratings.csv", index=False)
    (other / "campaign.toml").write_text(TOML + '[raters.judge-x]\nfamily = "gpt"\n')
    doc = push(load_campaign(other), url=url, api_key=token, show_judge="judge-x", show_threshold=0.5)
    assert doc["shown_judge"] == "judge-x" and doc["pre_annotated"] == 3
    assert doc["not_pre_annotated_metrics"] == ["contextual_precision", "politeness"]
    project = client.projects.get(doc["project_id"])
    assert project.model_version == "judge-x" and project.show_collab_predictions
    tasks = tasks_by_case(client, doc["project_id"])
    shown = {
        case: [p.result[0]["value"]["choices"] for p in client.predictions.list(task=task)]
        for case, task in tasks.items()
    }
    assert shown == {"c0000": [["pass"]], "c0001": [["fail"]], "c0002": [["pass"]]}
    client.annotations.create(
        id=tasks["c0000"], completed_by=users["ann1"], result=results("pass", ["relevant", "relevant", "relevant"], "2")
    )
    assert pull(load_campaign(other), url=url, api_key=token)["shown_judge"] == "judge-x"
    warnings = compute_stats(load_campaign(other), n_boot=20)["metrics"][0]["warnings"]
    assert any("saw judge judge-x's scores as pre-annotations" in w for w in warnings)
    with pytest.raises(LabelStudioError, match="no judge of that name"):
        push(load_campaign(other), url=url, api_key=token, show_judge="nobody")


def test_push_only_a_sample(tmp_path, server):
    from calibrate.sampling.designs import draw_sample, read_sample_ids, write_sample

    url, token, client, _users = server
    folder = make_campaign(tmp_path, n=30)
    campaign = load_campaign(folder)
    path = write_sample(folder, draw_sample(campaign, 7, seed=3), "pilot")
    doc = push(campaign, url=url, api_key=token, case_ids=read_sample_ids(path, campaign))
    assert doc["tasks_added"] == 7
    assert set(tasks_by_case(client, doc["project_id"])) == set(pd.read_csv(path)["case_id"])


def test_an_adjudicators_labels_become_decisions(tmp_path, server):
    from calibrate.campaign.reference import human_reference
    from calibrate.humans.adjudication import decision_history

    url, token, client, users = server
    folder = make_campaign(tmp_path, n=2)
    doc = push(load_campaign(folder), url=url, api_key=token)
    tasks = tasks_by_case(client, doc["project_id"])
    client.annotations.create(
        id=tasks["c0001"], completed_by=users["ann1"], result=results("pass", ["relevant", "relevant", "relevant"], "2")
    )
    client.annotations.create(
        id=tasks["c0001"], completed_by=users["ann2"], result=results("fail", ["relevant", "relevant", "relevant"], "2")
    )
    client.annotations.create(
        id=tasks["c0001"],
        completed_by=users["adj"],
        result=results("pass", ["not relevant", "relevant", "relevant"], "1"),
    )
    with pytest.raises(LabelStudioError, match="no label of theirs"):
        pull(load_campaign(folder), url=url, api_key=token, adjudicators=["nobody@x"])
    summary = pull(load_campaign(folder), url=url, api_key=token, adjudicators=["adj@calibrate.test"])
    assert summary["decisions"] == {"new": 3, "changed": 0, "unchanged": 0}
    ratings = pd.read_csv(folder / RATINGS_FILE)
    assert "adj@calibrate.test" not in set(ratings["rater"]) and len(ratings) == 6
    c = load_campaign(folder)
    ref = human_reference(c, "faithfulness")
    assert dict(zip(ref.case_ids, ref.values)) == {"c0000": 1.0, "c0001": 1.0} and ref.n_adjudicated == 1
    assert {h["adjudicator"] for h in decision_history(folder)} == {"adj@calibrate.test"}


def test_a_pull_never_drops_a_label_silently(tmp_path, server):
    """An export that lacks labels an earlier pull brought is not a deletion; a label deleted in Label
    Studio leaves the statistics only when a pull read the whole project, and stays in the history."""
    import subprocess
    import sys
    from pathlib import Path

    url, token, client, users = server
    folder = make_campaign(tmp_path, n=4)
    project_id = push(load_campaign(folder), url=url, api_key=token)["project_id"]
    tasks = tasks_by_case(client, project_id)
    made = {}
    for case_id, task_id in sorted(tasks.items()):
        for who in ("ann1", "ann2"):
            made[(case_id, who)] = client.annotations.create(
                id=task_id, completed_by=users[who], result=results("pass", ["relevant"] * 3, "1")
            )
    assert pull(load_campaign(folder), url=url, api_key=token)["ratings_written"] == 24  # 8 annotations x 3 metrics
    full = pd.read_csv(folder / RATINGS_FILE)
    calibrate = Path(sys.executable).parent / "calibrate"

    # an empty export file, then one of two tasks: every label pulled before stays
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    pulled = subprocess.run(
        [str(calibrate), "labelstudio", "pull", str(folder), "--file", str(empty)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert pulled.returncode == 0, pulled.stderr
    assert "24 rating(s) in labelstudio_ratings.csv" in pulled.stdout
    pd.testing.assert_frame_equal(pd.read_csv(folder / RATINGS_FILE), full)
    export = json.loads(
        b"".join(client.projects.exports.download_sync(project_id, export_type="JSON", download_all_tasks=True))
    )
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps([t for t in export if t["data"]["case_id"] in ("c0000", "c0001")]))
    doc = pull_file(load_campaign(folder), partial)
    assert doc["source"] == f"{url.rstrip('/')}#project-{project_id}"  # the project this campaign pushed
    assert (doc["labels"], doc["unchanged"], doc["absent_kept"], doc["withdrawn"]) == (12, 12, 12, 0)
    pd.testing.assert_frame_equal(pd.read_csv(folder / RATINGS_FILE), full)  # annotators keep their names

    # deleted in Label Studio: a pull through the API (the whole project) withdraws it, and says so
    client.annotations.delete(id=made[("c0003", "ann2")].id)
    doc = pull(load_campaign(folder), url=url, api_key=token)
    assert (doc["withdrawn"], doc["ratings_written"]) == (3, 21)
    left = pd.read_csv(folder / RATINGS_FILE)
    assert not ((left["case_id"] == "c0003") & (left["rater"] == "ann2@calibrate.test")).any()
    store = LabelStore(folder)
    assert [h["annotator"] for h in store.history("c0003")].count("ann2@calibrate.test") == 3  # kept in the history
    store.close()
    # the older export file still holds it: pulling that file does not bring back what the project deleted since
    before_deletion = tmp_path / "before.json"
    before_deletion.write_text(json.dumps(export))
    old = pull_file(load_campaign(folder), before_deletion)
    assert (old["deleted_since"], old["unchanged"], old["ratings_written"]) == (3, 21, 21)
    assert pull(load_campaign(folder), url=url, api_key=token)["withdrawn"] == 0  # withdrawn once, counted once


def test_a_pull_after_a_metric_is_removed_keeps_its_labels_aside(tmp_path, server):
    """Issue 24: a metric removed from campaign.toml after the push stranded the pull ("unknown metric
    politeness": the project's metrics were rebuilt from campaign.toml, then its results refused). Its
    labels are now read with the interface calibrate pushed, kept in the store and labelstudio_ratings.csv,
    set aside, counted, withdrawn when deleted in Label Studio, and back when it is declared again."""
    url, token, client, users = server
    folder = make_campaign(tmp_path, n=2)
    project_id = push(load_campaign(folder), url=url, api_key=token)["project_id"]
    tasks = tasks_by_case(client, project_id)
    first = client.annotations.create(
        id=tasks["c0000"], completed_by=users["ann1"], result=results("pass", ["relevant"] * 3, "2")
    )
    client.annotations.create(
        id=tasks["c0001"], completed_by=users["ann2"], result=results("fail", ["not relevant"] * 3, "1")
    )
    (folder / "campaign.toml").write_text(TOML.split("[metrics.politeness]")[0])  # removed before any pull
    doc = pull(load_campaign(folder), url=url, api_key=token)
    assert (doc["labels"], doc["new"], doc["set_aside"]) == (6, 6, {"labels": 2, "metrics": ["politeness"]})
    campaign = load_campaign(folder)
    assert {(s.case_id, s.metric, s.why) for s in campaign.set_aside} == {
        ("c0000", "politeness", "metric"),
        ("c0001", "politeness", "metric"),
    }
    assert "politeness" not in set(campaign.ratings["metric"])
    # changed in Label Studio while removed: a new revision; deleted there: withdrawn, as any label
    client.annotations.update(id=first.id, result=results("pass", ["relevant"] * 3, "0"))
    assert pull(load_campaign(folder), url=url, api_key=token)["changed"] == 1
    (folder / "campaign.toml").write_text(TOML)
    back = load_campaign(folder).ratings.query("metric == 'politeness'")
    assert dict(zip(back["case_id"], back["value"])) == {"c0000": 0.0, "c0001": 1.0}
    (folder / "campaign.toml").write_text(TOML.split("[metrics.politeness]")[0])
    client.annotations.delete(id=first.id)
    gone = pull(load_campaign(folder), url=url, api_key=token)
    assert gone["withdrawn"] == 3 and gone["set_aside"] == {"labels": 1, "metrics": ["politeness"]}
    (folder / "campaign.toml").write_text(TOML)
    assert load_campaign(folder).ratings.query("metric == 'politeness'")["case_id"].tolist() == ["c0001"]
