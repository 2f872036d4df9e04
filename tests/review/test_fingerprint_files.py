"""The fingerprint folder's doors: what a decision trusts is what calibrate fingerprint wrote, as it wrote
it. A planted, copied, edited, deleted or damaged file is refused by name, whatever it holds; the latest
fingerprint is the one recorded last, whatever the file names say. Attacked with hypothesis: arbitrary
names and bytes planted, arbitrary JSON in each file (with an index made to agree), bytes flipped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate.base.errors import Problem
from calibrate.review.fingerprint_files import (
    ANCHORS_FILE,
    INDEX_FILE,
    AnchorSet,
    FingerprintDocument,
    content_hash,
    read_folder,
    store_anchors,
    store_fingerprint,
)

JUDGE = "faith-gpt"
ANCHORS = {
    "judge": JUDGE,
    "metric": "faithfulness",
    "threshold": 0.5,
    "threshold_source": "given",
    "created": "2025-01-01T00:00:00+00:00",
    "settings": {"model": "gpt"},
    "anchors": [{"case_id": f"c{i}", "score": i / 8} for i in range(8)],
}


def fingerprint(verdict: str, created: str, **extra) -> dict:
    return {
        "judge": JUDGE,
        "metric": "faithfulness",
        "verdict": verdict,
        "created": created,
        "reasons": [f"{verdict.lower()} because"],
        "threshold": 0.5,
        "anchors": [],
        **extra,
    }


def written(folder: Path, *documents: tuple[str, dict]) -> Path:
    """A judge's folder as calibrate fingerprint writes it: the anchors, then each fingerprint."""
    _, _, index = store_anchors(folder, JUDGE, None, ANCHORS)
    for name, document in documents:
        store_fingerprint(folder, JUDGE, index, name, document)
        index = read_folder(folder, JUDGE).index
    return folder


SAME = ("20250101T000000000000Z.json", fingerprint("SAME", "2025-01-01T00:00:00.000000+00:00"))
CHANGED = ("20250201T000000000000Z.json", fingerprint("CHANGED", "2025-02-01T00:00:00.000000+00:00"))


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    return written(tmp_path_factory.mktemp("fp") / JUDGE, SAME, CHANGED)


@pytest.fixture
def folder(template, tmp_path) -> Path:
    return Path(shutil.copytree(template, tmp_path / JUDGE))


def refused_names(found) -> list[str]:
    return sorted(Path(p.file).name for p in found.refused)


def test_what_calibrate_wrote_is_trusted_and_the_latest_is_the_latest_recorded(folder):
    found = read_folder(folder, JUDGE)
    assert found.refused == () and found.trusted == 2 and found.latest.verdict == "CHANGED"
    assert found.latest_file.name == CHANGED[0] and isinstance(found.anchors, AnchorSet)
    index = json.loads((folder / INDEX_FILE).read_text())
    assert [e["file"] for e in index["fingerprints"]] == [SAME[0], CHANGED[0]]


def test_the_latest_is_chosen_by_its_recorded_time_not_its_file_name(tmp_path):
    # the name that sorts last holds the earlier time
    found = read_folder(
        written(
            tmp_path / JUDGE,
            ("99991231T235959Z.json", fingerprint("SAME", "2020-01-01T00:00:00Z")),
            ("00000101T000000Z.json", fingerprint("CHANGED", "2030-01-01T00:00:00Z")),
        ),
        JUDGE,
    )
    assert found.refused == () and found.latest.verdict == "CHANGED"
    # recorded at the same time: a verdict other than SAME wins, whatever the order written
    found = read_folder(
        written(
            tmp_path / "tie" / JUDGE,
            ("20250101T000000Z.json", fingerprint("FLAKY", "2025-01-01T00:00:00Z")),
            ("20250101T000001Z.json", fingerprint("SAME", "2025-01-01T00:00:00Z")),
        ),
        JUDGE,
    )
    assert found.latest.verdict == "FLAKY"


def test_a_stray_file_saying_same_is_refused_by_name(folder):
    stray = folder / "99999999T999999Z.json"
    stray.write_text(json.dumps(fingerprint("SAME", "2099-01-01T00:00:00+00:00")))
    found = read_folder(folder, JUDGE)
    assert refused_names(found) == [stray.name] and found.latest is None and found.trusted == 2
    assert "index.json does not list it" in found.refused[0].message and "remove it" in found.refused[0].expected


def test_an_edited_deleted_or_copied_fingerprint_is_refused(folder, tmp_path):
    edited = folder / CHANGED[0]
    edited.write_text(edited.read_text().replace('"CHANGED"', '"SAME"'))
    found = read_folder(folder, JUDGE)
    assert refused_names(found) == [CHANGED[0]] and "changed since calibrate fingerprint wrote it" in str(
        found.refused[0]
    )
    edited.unlink()  # gone: the SAME before it must not pass for the latest
    found = read_folder(folder, JUDGE)
    assert refused_names(found) == [CHANGED[0]] and "listed in index.json but gone" in found.refused[0].message
    # another campaign's folder copied in without its index: nothing vouches for it
    (folder / INDEX_FILE).unlink()
    found = read_folder(folder, JUDGE)
    assert found.latest is None and refused_names(found) == [SAME[0], ANCHORS_FILE]


def test_re_indenting_or_crlf_line_endings_are_no_edit(folder):
    for path in (folder / SAME[0], folder / ANCHORS_FILE):
        path.write_bytes(json.dumps(json.loads(path.read_text()), indent=7).replace("\n", "\r\n").encode())
    assert read_folder(folder, JUDGE).refused == ()


def test_a_fingerprint_of_another_judge_or_an_index_of_another_judge_is_refused(folder, tmp_path):
    other = written(tmp_path / "other", ("20990101T000000Z.json", {**fingerprint("SAME", "2099-01-01T00:00:00Z")}))
    shutil.copy(other / "20990101T000000Z.json", folder)
    index = json.loads((folder / INDEX_FILE).read_text())
    index["fingerprints"].append(json.loads((other / INDEX_FILE).read_text())["fingerprints"][0])
    (folder / INDEX_FILE).write_text(json.dumps(index))
    assert read_folder(folder, JUDGE).latest.created.year == 2099  # a hand-made index is not a signature ...
    index["judge"] = "someone-else"
    (folder / INDEX_FILE).write_text(json.dumps(index))
    found = read_folder(folder, JUDGE)  # ... but it must at least be this judge's
    assert found.latest is None and "the index of another judge" in found.refused[0].message


def test_links_leftovers_hidden_files_and_folders(folder, tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(fingerprint("SAME", "2099-01-01T00:00:00Z")))
    (folder / "20990101T000000Z.json").symlink_to(outside)
    (folder / "20990101T000001Z.json.tmp").write_text("half written")  # an interrupted write
    (folder / ".DS_Store").write_bytes(b"\0")
    (folder / "20250101T000000000000Z").mkdir()  # a run's scratch folder
    found = read_folder(folder, JUDGE)
    assert refused_names(found) == ["20990101T000000Z.json"] and found.latest is None
    (folder / "20990101T000000Z.json").unlink()
    assert read_folder(folder, JUDGE).latest.verdict == "CHANGED"


def test_the_writer_checks_what_it_writes(tmp_path):
    with pytest.raises(ValueError, match="threshold"):
        store_anchors(tmp_path / JUDGE, JUDGE, None, {**ANCHORS, "threshold": float("nan")})
    assert not (tmp_path / JUDGE / ANCHORS_FILE).exists()


# ---------------------------------------------------------------------------------------- attacks
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


#: a document that is nearly right: each field of a real one replaced, dropped or kept
def near(document: dict) -> st.SearchStrategy:
    return st.fixed_dictionaries({k: st.one_of(st.just(v), json_values) for k, v in document.items()}).flatmap(
        lambda d: st.sets(st.sampled_from(sorted(d))).map(lambda drop: {k: v for k, v in d.items() if k not in drop})
    )


ATTACK = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def check_never_trusts_what_calibrate_did_not_write(found) -> None:
    assert all(isinstance(p, Problem) and p.file and p.message for p in found.refused)
    assert found.latest is None or isinstance(found.latest, FingerprintDocument)


@ATTACK
@given(
    name=st.text(min_size=1, max_size=40).filter(lambda n: "/" not in n and "\0" not in n and n not in (".", "..")),
    data=st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()),
)
def test_attack_a_planted_file_never_becomes_the_latest(folder, name, data):
    target = folder / name
    if target.exists() or len(name.encode()) > 200:
        return
    target.write_bytes(data)
    try:
        found = read_folder(folder, JUDGE)
        check_never_trusts_what_calibrate_did_not_write(found)
        ignored = name.startswith(".") or name.endswith(".tmp")
        assert ignored or name in refused_names(found), (name, found.refused)
        assert found.latest_file.name == CHANGED[0] if ignored else found.latest is None
    finally:
        target.unlink()


@ATTACK
@given(which=st.sampled_from([SAME[0], CHANGED[0], ANCHORS_FILE, INDEX_FILE]), data=st.data())
def test_attack_any_change_to_a_written_file_is_refused_never_trusted(folder, which, data):
    path = folder / which
    original = path.read_bytes()
    position = data.draw(st.integers(0, len(original) - 1))
    replacement = data.draw(st.binary(min_size=0, max_size=3))
    changed = original[:position] + replacement + original[position + 1 :]
    try:
        value = json.loads(changed)
        same_value = content_hash(value) == content_hash(json.loads(original))
    except (ValueError, RecursionError):
        same_value = False
    path.write_bytes(changed)
    try:
        found = read_folder(folder, JUDGE)
        check_never_trusts_what_calibrate_did_not_write(found)
        if not same_value:  # the change changed what the file says: refused, named
            assert found.refused and (which == INDEX_FILE or which in refused_names(found))
            assert found.latest is None and found.anchors is None
    finally:
        path.write_bytes(original)


@ATTACK
@given(document=st.one_of(json_values, near(ANCHORS), near({**ANCHORS, "anchors": [{"case_id": 5, "score": "x"}]})))
def test_attack_anchor_sets_read_through_their_schema_even_with_a_matching_hash(folder, document):
    """A hand-made index that agrees with the file still leaves the schema to stand: typed or refused."""
    path, index_path = folder / ANCHORS_FILE, folder / INDEX_FILE
    original, original_index = path.read_bytes(), index_path.read_bytes()
    try:
        path.write_text(json.dumps(document))
        index = json.loads(original_index)
        index["anchors"]["sha256"] = content_hash(json.loads(path.read_text()))
        index_path.write_text(json.dumps(index))
        found = read_folder(folder, JUDGE)
        check_never_trusts_what_calibrate_did_not_write(found)
        if found.anchors is not None:
            assert found.refused == () and len(found.anchors.anchors) >= 4
            assert all(isinstance(a.score, float) and isinstance(a.case_id, str) for a in found.anchors.anchors)
        else:
            assert set(refused_names(found)) == {ANCHORS_FILE}
    finally:
        path.write_bytes(original)
        index_path.write_bytes(original_index)


@ATTACK
@given(document=st.one_of(json_values, near(CHANGED[1]), near(SAME[1])), index=st.one_of(json_values, st.just(None)))
def test_attack_fingerprints_and_indexes_read_through_their_schemas(folder, document, index):
    path, index_path = folder / CHANGED[0], folder / INDEX_FILE
    original, original_index = path.read_bytes(), index_path.read_bytes()
    try:
        path.write_text(json.dumps(document))
        if index is None:  # the index made to agree with the file
            made = json.loads(original_index)
            made["fingerprints"][-1]["sha256"] = content_hash(json.loads(path.read_text()))
            index_path.write_text(json.dumps(made))
        else:
            index_path.write_text(json.dumps(index))
        found = read_folder(folder, JUDGE)
        check_never_trusts_what_calibrate_did_not_write(found)
        if found.latest is not None and found.latest_file.name == CHANGED[0]:
            assert found.latest.verdict in ("SAME", "CHANGED", "FLAKY", "FAILED") and found.refused == ()
    finally:
        path.write_bytes(original)
        index_path.write_bytes(original_index)
