"""Arbitrary text in every user-facing field and file (brackets, markup, NUL, RTL, newlines, pipes, quotes,
emoji): no command gives a traceback, and no text is lost — a name comes back exactly in the JSON
documents and in the terminal, a bad value is quoted exactly in its error, the report escapes it.

The commands run in-process (click's runner), as the command line runs them."""

import csv
import json
import os
import re

import pandas as pd
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate.cli import main
from calibrate.cli.console import shown
from tests.conftest import write_campaign

EXAMPLES = int(os.environ.get("ATTACK_EXAMPLES", 60))
#: text of any kind: brackets and markup, NUL and other controls, right-to-left marks, newlines, pipes
text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=16) | st.sampled_from(
    [
        "[red]x[/]",
        "[/x]",
        "<script>alert(1)</script>",
        "a|b",
        "x\ny",
        "c0\x00",
        "\u202eevil",
        "**b**",
        "`c`",
        "[l](javascript:x)",
        "'\"",
        "&amp;",
        "😀",
        "j@x",
        " ",
    ]
)


def toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def campaign(tmp_path, *, name: str, metric: str, rater: str, case_text: str, reason: str, value: str | None = None):
    n = 12
    ids = [f"c{i:02d}" for i in range(n)]
    human = [i % 2 for i in range(n)]
    scores = [round(0.2 + 0.6 * h + 0.01 * i, 3) for i, h in enumerate(human)]
    rows = [(c, metric, "ann", "human", h, "", "") for c, h in zip(ids, human)]
    rows += [(c, metric, rater, "judge", s, "", reason) for c, s in zip(ids, scores)]
    if value is not None:
        rows[0] = (ids[0], metric, "ann", "human", value, "", "")
    frame = pd.DataFrame(rows, columns=["case_id", "metric", "rater", "rater_kind", "value", "error", "reason"])
    config = (
        f'name = {toml_string(name)}\n[metrics.{toml_string(metric)}]\nscale = "binary"\n'
        f"description = {toml_string(case_text)}\n"
    )
    cases = [
        {"case_id": c, "input": case_text, "actual_output": case_text, "metadata": {"kind": case_text}} for c in ids
    ]
    folder = write_campaign(tmp_path / "campaign", config, frame, cases)
    # every field quoted: pandas leaves a lone carriage return unquoted, which no CSV reader can read back
    frame.to_csv(folder / "ratings.csv", index=False, quoting=csv.QUOTE_ALL)
    return folder


def invoke(*args):
    result = CliRunner().invoke(main, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"calibrate {' '.join(map(str, args))}: a traceback") from result.exception
    assert result.exit_code in (0, 1, 2), result.exit_code
    return result


def controls(value: str) -> bool:
    return bool(re.search(r"[\x00-\x1f\x7f]", value))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(name=text, metric=text, rater=text, case_text=text, reason=text)
def test_names_and_texts_are_never_a_traceback_and_come_back_exactly(
    tmp_path_factory, name, metric, rater, case_text, reason
):
    folder = campaign(
        tmp_path_factory.mktemp("t"), name=name, metric=metric, rater=rater, case_text=case_text, reason=reason
    )
    validated = invoke("validate", folder)
    if validated.exit_code != 0:
        # refused: a message naming the file, never a traceback (ids with control characters, say)
        assert "problem" in validated.stderr and str(folder) in validated.stderr.replace("\n", "")
        return
    assert not controls(metric) and not controls(rater) and rater != "ann"
    stats = invoke("stats", folder, "--json", "--n-boot", 20)
    assert stats.exit_code == 0, stats.stderr
    doc = json.loads(stats.stdout)
    assert doc["campaign"] == name and doc["metrics"][0]["metric"] == metric
    assert {j["judge"] for j in doc["metrics"][0]["judges"]} == {rater}
    # the terminal shows the text literally: no markup eaten, in the table or in its lines (its control and
    # bidi characters escaped: tests/cli/test_terminal_safety.py)
    table = invoke("stats", folder, "--n-boot", 20)
    flat = table.stdout.replace("\n", "")
    assert shown(metric.strip()) in flat or (len(metric) > 10 and shown(metric.split()[0]) in flat)
    for command in (("thresholds", folder, "--json", "--n-boot", 0), ("gate", folder, "--json", "--n-boot", 20)):
        json.loads(invoke(*command).stdout)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=text)
def test_a_bad_value_is_quoted_exactly_in_its_error(tmp_path_factory, value):
    folder = campaign(
        tmp_path_factory.mktemp("v"), name="n", metric="m", rater="j", case_text="q", reason="r", value=value
    )
    result = invoke("validate", folder)
    if result.exit_code == 0:  # read as a number on the binary scale: 0 or 1 (" 1", "1e0", ...)
        assert float(pd.to_numeric(pd.Series([value.strip()])).iloc[0]) in (0.0, 1.0)
        return
    assert result.exit_code == 2
    assert repr(value) in result.stderr.replace("\n", ""), result.stderr


@settings(max_examples=max(10, EXAMPLES // 4), deadline=None, suppress_health_check=list(HealthCheck))
@given(rater=text, case_text=text)
def test_the_markdown_report_escapes_what_users_wrote(tmp_path_factory, rater, case_text):
    tmp = tmp_path_factory.mktemp("r")
    folder = campaign(tmp, name="n", metric="m", rater=rater, case_text=case_text, reason=case_text)
    if invoke("validate", folder).exit_code != 0:
        return
    result = invoke("report", folder, "--out", tmp / "out", "--n-boot", 20)
    assert result.exit_code == 0, result.stderr
    markdown = (tmp / "out" / "report.md").read_text()
    assert "<script" not in markdown  # raw HTML in a name or a case is never live
    pipes = re.compile(r"(?<!\\)\|")
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("| judge |"):  # every row of a table keeps the header's cells
            cells = len(pipes.findall(line))
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                assert len(pipes.findall(row)) == cells, row
