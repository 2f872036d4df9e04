"""Bad or odd campaign files: a clear error (file, line, field, found, expected) or exactly the right
reading, never a traceback; ids kept exactly as written, never merged."""

import json
from pathlib import Path

import pandas as pd
import pytest

from calibrate import CampaignError, load_campaign
from tests.conftest import run_cli

TOML = 'name = "x"\n[metrics.m]\nscale = "binary"\n'
HEADER = "case_id,metric,rater,rater_kind,value\n"


def folder_with(tmp_path, files: dict[str, bytes | str]) -> Path:
    folder = tmp_path / "campaign"
    folder.mkdir()
    (folder / "campaign.toml").write_text(TOML)
    for name, content in files.items():
        (folder / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    return folder


def problems(folder) -> str:
    with pytest.raises(CampaignError) as raised:
        load_campaign(folder)
    return str(raised.value)


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("ratings.csv", b"", "ratings.csv, line 1: the file is empty"),
        ("ratings.jsonl", b"", "ratings.jsonl: the file holds no rating"),
        ("ratings.parquet", b"", "ratings.parquet: not a readable Parquet file"),
        ("ratings.parquet", b"PAR1 garbage, not Parquet", "ratings.parquet: not a readable Parquet file"),
        (
            "ratings.jsonl",
            b'{"case_id": "c0", "metric": "m", "rater": "a", "rater_kind": "human", "value": 1}\n\xff\n',
            "ratings.jsonl, line 2: not UTF-8 text (byte 0xff",
        ),
        ("ratings.csv", HEADER.encode() + b"c0,m,a,human,1\n\xe9\n", "ratings.csv, line 3: not UTF-8 text (byte 0xe9"),
        ("ratings.csv", b'case_id,metric,rater,rater_kind,value\n"c0,m,a,human,1\n', "field(s) where the header has 5"),
    ],
)
def test_empty_truncated_and_corrupt_files_are_errors_naming_the_file(tmp_path, name, content, expected):
    text = problems(folder_with(tmp_path, {name: content}))
    assert expected in text, text
    result = run_cli("validate", tmp_path / "campaign")
    assert result.returncode == 2 and "Traceback" not in result.stderr and expected in result.stderr.replace("\n", "")


def test_cases_that_are_not_utf8_are_an_error(tmp_path):
    folder = folder_with(
        tmp_path,
        {"ratings.csv": HEADER + "c0,m,a,human,1\n", "cases.jsonl": b'{"case_id": "c0", "input": "caf\xe9"}\n'},
    )
    assert "cases.jsonl, line 1: not UTF-8 text (byte 0xe9" in problems(folder)


def test_a_duplicated_column_is_an_error_not_silently_ignored(tmp_path):
    folder = folder_with(tmp_path, {"ratings.csv": "case_id,metric,rater,rater_kind,value,value\nc0,m,a,human,1,0\n"})
    assert "ratings.csv, line 1, field 'value': duplicate column" in problems(folder)


def test_line_numbers_count_quoted_line_breaks_and_blank_lines(tmp_path):
    folder = folder_with(tmp_path, {"ratings.csv": HEADER + '"c0",m,"a\nstill a",human,1\n\n\nc1,m,b,human,7\n'})
    text = problems(folder)
    assert "line 2, field 'rater': holds a control character" in text  # the quoted field starts on line 2
    assert "ratings.csv, line 6, field 'value': value outside the scale" in text  # after 2 blank lines


def test_ids_are_kept_exactly_or_refused(tmp_path):
    big = 2**60
    rows = [{"case_id": big + i, "metric": "m", "rater": "a", "rater_kind": "human", "value": i % 2} for i in range(2)]
    folder = folder_with(tmp_path, {"ratings.jsonl": "".join(json.dumps(r) + "\n" for r in rows)})
    assert sorted(load_campaign(folder).ratings["case_id"]) == [str(big), str(big + 1)]  # not merged through float64

    nul = tmp_path / "nul"
    nul.mkdir()
    (nul / "campaign.toml").write_text(TOML)
    (nul / "ratings.jsonl").write_text(
        "".join(
            json.dumps({"case_id": c, "metric": "m", "rater": "a", "rater_kind": "human", "value": 1}) + "\n"
            for c in ("c0", "c0\x00")
        )
    )
    assert "line 2, field 'case_id': holds a control character ('\\x00')" in problems(nul)

    obj = tmp_path / "obj"
    obj.mkdir()
    (obj / "campaign.toml").write_text(TOML)
    (obj / "ratings.jsonl").write_text(
        json.dumps({"case_id": {"a": 1}, "metric": "m", "rater": "a", "rater_kind": "human", "value": 1}) + "\n"
    )
    assert "line 1, field 'case_id': a dict, not text" in problems(obj)


def test_parquet_bytes_ids_are_read_as_their_text(tmp_path):
    folder = tmp_path / "campaign"
    folder.mkdir()
    (folder / "campaign.toml").write_text(TOML)
    pd.DataFrame(
        {"case_id": [b"c0", b"c1"], "metric": "m", "rater": "a", "rater_kind": "human", "value": [1, 0]}
    ).to_parquet(folder / "ratings.parquet")
    assert sorted(load_campaign(folder).ratings["case_id"]) == ["c0", "c1"]  # was "b'c0'"


def test_a_run_and_a_rater_shown_under_one_name_are_an_error(tmp_path):
    folder = folder_with(
        tmp_path,
        {
            "ratings.csv": "case_id,metric,rater,rater_kind,value,run_id\n"
            "c0,m,ann,human,1,\nc0,m,j@x,judge,0.5,\nc0,m,j,judge,0.4,x\n"
        },
    )
    assert "rater 'j@x' and rater 'j' with run_id 'x' would both be shown as 'j@x'" in problems(folder)


def test_the_markdown_report_escapes_html_pipes_and_newlines(tmp_path):
    from calibrate.report import markdown_text

    folder = folder_with(
        tmp_path,
        {
            "ratings.csv": "case_id,metric,rater,rater_kind,value\n"
            + "".join(f'c{i},m,ann,human,{i % 2}\nc{i},m,"<b>j|x</b>",judge,{0.3 + 0.4 * (i % 2)}\n' for i in range(10))
        },
    )
    result = run_cli("report", folder, "--out", tmp_path / "out", "--n-boot", "20")
    assert result.returncode == 0, result.stderr
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "<b>" not in markdown and "&lt;b&gt;j\\|x&lt;/b&gt;" in markdown
    assert str(markdown_text("a\nb|c")) == "a b\\|c"


def test_a_report_with_a_judge_scored_before_any_label_is_written(tmp_path):
    folder = folder_with(tmp_path, {"ratings.csv": HEADER + "c0,m,a,human,1\nc0,m,j,judge,0.7\nc1,m,j,judge,0.2\n"})
    result = run_cli("report", folder, "--out", tmp_path / "out", "--n-boot", "20")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    recs = json.loads((tmp_path / "out" / "report.json").read_text())["recommendations"]
    assert recs[0]["threshold"] is None and "only 1 case(s) rated by both" in recs[0]["warnings"][0]


@pytest.mark.parametrize(
    "out, expected",
    [
        ("a-file", "Directory 'a-file' is a file"),
        ("a-file/sub", "a-file/sub: cannot be made (Not a directory)"),
    ],
)
def test_an_out_folder_that_is_a_file_or_cannot_be_made_is_an_error(tmp_path, out, expected, monkeypatch):
    folder = folder_with(tmp_path, {"ratings.csv": HEADER + "c0,m,a,human,1\nc0,m,j,judge,0.7\n"})
    (tmp_path / "a-file").write_text("kept")
    monkeypatch.chdir(tmp_path)
    result = run_cli("report", folder, "--out", out, "--n-boot", "20")
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert expected in result.stderr and (tmp_path / "a-file").read_text() == "kept"


# Issue 24: cases.jsonl and ratings.jsonl are read through calibrate.base.documents, whose lines end at
# "\n" only. str.splitlines also broke a line at U+2028, U+2029 and U+0085, which JSON allows raw inside a
# string (json.dumps(..., ensure_ascii=False), pandas, jq -c write them so): the campaign no longer loaded.
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SEPARATORS = "a\u2028b\u2029c\x85d\re\x0bf\x0cg\x1ch"


def jsonl(records) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records).encode()


def test_a_line_separator_inside_a_json_string_is_text_not_a_line_break(tmp_path):
    cases = [
        {
            "case_id": "c0",
            "input": f"q{SEPARATORS}",
            "retrieval_context": [SEPARATORS],
            "metadata": {SEPARATORS: SEPARATORS},
        },
        {"case_id": "c1", "input": "q1"},
    ]
    ratings = [
        {"case_id": f"c{i}", "metric": "m", "rater": "a", "rater_kind": "human", "value": i, "reason": SEPARATORS}
        for i in range(2)
    ]
    folder = folder_with(tmp_path, {"cases.jsonl": jsonl(cases), "ratings.jsonl": jsonl(ratings)})
    campaign = load_campaign(folder)
    assert campaign.cases["c0"] == cases[0] and campaign.cases["c1"] == cases[1]
    assert campaign.ratings["reason"].tolist() == [SEPARATORS, SEPARATORS]
    assert campaign.ratings["line"].tolist() == [1, 2]
    # a problem after such a line is named at its own line
    (folder / "cases.jsonl").write_bytes(jsonl(cases) + b'{"case_id": \n[1]\n')
    text = problems(folder)
    assert "cases.jsonl, line 3: not valid JSON" in text and "line 1" not in text and "line 2" not in text


@pytest.mark.parametrize(
    "content, words",
    [
        (b'{"case_id": "c0"}\n[1, 2]\n', "cases.jsonl, line 2: each case must be a JSON object"),
        (b'{"case_id": "c0"}\n\n{"case_id": \n', "cases.jsonl, line 3: not valid JSON"),
        (b'{"case_id": "c0", "input": 3}\n', "cases.jsonl, line 1, field 'input': wrong type for case 'c0'"),
        (b'{"case_id": "c0", "input": "' + b"\xe9" + b'"}\n', "cases.jsonl, line 1: not UTF-8 text (byte 0xe9"),
        (
            b'{"case_id": "c0"}\n{"case_id": "c1", "x": ' + b"[" * 300 + b"]" * 300 + b"}\n",
            "cases.jsonl, line 2: nested deeper than 200 levels",
        ),
        (
            b'{"case_id": "c0"}\r\n{"case_id": "c0"}\r\n',
            "cases.jsonl, line 2, field 'case_id': duplicate case_id (first at line 1)",
        ),
    ],
)
def test_a_damaged_cases_file_names_its_line_and_field(tmp_path, content, words):
    folder = folder_with(tmp_path, {"ratings.csv": HEADER + "c0,m,a,human,1\n", "cases.jsonl": content})
    text = problems(folder)
    assert words in text, text


def test_a_bom_and_crlf_line_ends_are_read(tmp_path):
    folder = folder_with(
        tmp_path,
        {
            "ratings.csv": HEADER + "c0,m,a,human,1\n",
            "cases.jsonl": b'\xef\xbb\xbf{"case_id": "c0"}\r\n\r\n{"case_id": "c1"}\r\n',
        },
    )
    assert sorted(load_campaign(folder).cases) == ["c0", "c1"]


case_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=30)


@settings(
    max_examples=int(__import__("os").environ.get("ATTACK_EXAMPLES", 150)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    texts=st.lists(st.tuples(case_text, case_text, st.lists(case_text, max_size=3)), min_size=1, max_size=4),
    ascii_only=st.booleans(),
)
def test_any_text_in_cases_jsonl_reads_back_exactly(tmp_path_factory, texts, ascii_only):
    cases = [
        {"case_id": f"c{i}", "input": q, "actual_output": a, "retrieval_context": chunks, "metadata": {q: a}}
        for i, (q, a, chunks) in enumerate(texts)
    ]
    content = "".join(json.dumps(c, ensure_ascii=ascii_only) + "\n" for c in cases).encode()
    folder = folder_with(
        tmp_path_factory.mktemp("t"), {"ratings.csv": HEADER + "c0,m,a,human,1\n", "cases.jsonl": content}
    )
    assert load_campaign(folder).cases == {c["case_id"]: c for c in cases}


@settings(
    max_examples=int(__import__("os").environ.get("ATTACK_EXAMPLES", 150)),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    lines=st.lists(
        st.binary(max_size=40)
        | st.sampled_from([b'{"case_id": "c0"}', b"[]", b"{", b"\xff", b'{"case_id": "c\xe2\x80\xa8"}', b"null"]),
        min_size=1,
        max_size=5,
    )
)
def test_any_bytes_in_cases_jsonl_load_or_name_the_file(tmp_path_factory, lines):
    folder = folder_with(tmp_path_factory.mktemp("b"), {"ratings.csv": HEADER, "cases.jsonl": b"\n".join(lines)})
    try:
        load_campaign(folder)
    except CampaignError as exc:
        assert exc.problems and all(p.file.endswith("cases.jsonl") for p in exc.problems), str(exc)
