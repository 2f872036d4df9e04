"""calibrate's own files a person can edit (sample designs and tables, imported_ratings.json,
labelstudio_ratings.json, a sample file given to labelstudio push) read through their schemas: every
damage a clear error naming the file and the field or line, before any figure rests on it; never a
traceback, never weights quietly changed. The reproductions crashed (or passed wrong weights) before."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calibrate import load_campaign
from calibrate.base.errors import CampaignError
from calibrate.campaign.weights import design_weights

N = 40


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A campaign with a stratified sample ``strat`` and a Neyman pilot ``pilot`` drawn by calibrate sample."""
    from calibrate.sampling.designs import sample_cases

    folder = tmp_path_factory.mktemp("own") / "campaign"
    folder.mkdir()
    cases = [{"case_id": f"c{i:03d}", "input": f"q{i}", "metadata": {"kind": "a" if i % 3 else "b"}} for i in range(N)]
    rng = np.random.default_rng(0)
    human = (rng.random(N) < 0.5).astype(int)
    judge = np.clip(0.6 * human + rng.normal(0.2, 0.15, N), 0, 1).round(2)
    pd.DataFrame(
        {
            "case_id": [c["case_id"] for c in cases] * 2,
            "metric": "f",
            "rater": ["ann"] * N + ["j"] * N,
            "rater_kind": ["human"] * N + ["judge"] * N,
            "value": np.r_[human, judge],
        }
    ).to_csv(folder / "ratings.csv", index=False)
    (folder / "campaign.toml").write_text('name = "s"\n[metrics.f]\nscale = "binary"\n')
    (folder / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    sample_cases(load_campaign(folder), 10, strategy="stratified", by="kind", include_labelled=True, name="strat")
    sample_cases(load_campaign(folder), 8, strategy="neyman", judge="j", metric="f", name="pilot")
    return folder


@pytest.fixture
def folder(template, tmp_path) -> Path:
    return Path(shutil.copytree(template, tmp_path / "campaign"))


def use(folder: Path):
    """What reads the samples: the load, the design weights, the next step of the Neyman series."""
    from calibrate.sampling.designs import draw_sample

    campaign = load_campaign(folder)
    weights = design_weights(campaign, np.array(sorted(campaign.cases)))
    try:
        draw_sample(campaign, 4, strategy="neyman", judge="j", metric="f", seed=1)
    except ValueError as exc:
        if "not labelled enough" not in str(exc):
            raise
    return campaign, weights


def edit(path: Path, change) -> None:
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def test_what_calibrate_sample_wrote_reads_back(folder):
    from calibrate.campaign.own_files import SAMPLE_STRATEGIES
    from calibrate.sampling.designs import STRATEGIES

    campaign, weights = use(folder)
    assert sorted(campaign.samples) == ["pilot", "strat"] and weights.weights is not None
    assert campaign.samples["strat"]["design"]["by"] == "kind" and campaign.samples["pilot"]["design"]["edges"]
    assert (*STRATEGIES, "escalated") == SAMPLE_STRATEGIES  # and the queue calibrate escalate --sample writes


@pytest.mark.parametrize(
    "how, file, field",
    [
        ("created a number", "strat.json", "created"),  # TypeError sorting the designs by time
        ("strata a list", "strat.json", "strata"),  # AttributeError weighting
        ("a Neyman design without edges", "pilot.json", None),  # KeyError drawing the next step
        ("a series naming no sample", "pilot.json", "series"),  # KeyError drawing the next step
        ("a series that is text", "pilot.json", "series"),  # TypeError drawing the next step
        ("edges that are text", "pilot.json", "edges"),  # ValueError from numpy
        ("nested 100,000 deep", "strat.json", None),  # RecursionError
    ],
)
def test_a_damaged_design_is_named_not_a_traceback(folder, how, file, field):
    path = folder / "samples" / file
    if how == "created a number":
        edit(path, lambda d: {**d, "created": 5})
    elif how == "strata a list":
        edit(path, lambda d: {**d, "strata": [1, 2]})
    elif how == "a Neyman design without edges":
        edit(path, lambda d: {k: v for k, v in d.items() if k != "edges"})
    elif how == "a series naming no sample":
        edit(path, lambda d: {**d, "series": ["ghost"], "phase": "allocation"})
    elif how == "a series that is text":
        edit(path, lambda d: {**d, "series": "strat"})
    elif how == "edges that are text":
        edit(path, lambda d: {**d, "edges": "x"})
    else:
        path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CampaignError) as raised:
        use(folder)
    text = str(raised.value)
    assert str(path) in text and (field is None or f"field '{field}'" in text), text


@pytest.mark.parametrize(
    "how, message",
    [
        ("a probability edited in the table", "not the stratum's inclusion probability in the design"),
        ("a probability edited in the design", "is not (drawn_before + sampled) / size"),
        ("a row removed", "its design (strat.json) says were drawn"),
        ("a stratum the design does not have", "a stratum the design does not have"),
        ("a case drawn twice", "case drawn twice"),
    ],
)
def test_an_edit_that_would_change_the_weights_is_refused(folder, how, message):
    """Before, each of these loaded, and the statistics weighted the labels by what the edit said."""
    table = folder / "samples" / "strat.csv"
    lines = table.read_text().splitlines(keepends=True)
    case, stratum, p = lines[1].strip().split(",")
    if how == "a probability edited in the table":
        lines[1] = f"{case},{stratum},0.9\n"
    elif how == "a probability edited in the design":
        edit(
            folder / "samples" / "strat.json",
            lambda d: {**d, "strata": {k: {**v, "inclusion_probability": 0.9} for k, v in d["strata"].items()}},
        )
    elif how == "a row removed":
        del lines[1]
    elif how == "a stratum the design does not have":
        lines[1] = f"{case},zzz,{p}\n"
    else:
        lines.append(lines[1])
    table.write_text("".join(lines))
    with pytest.raises(CampaignError, match=re.escape(message)) as raised:
        use(folder)
    assert "samples/strat." in str(raised.value)


@pytest.mark.parametrize(
    "name, text, field",
    [
        ("imported_ratings.json", '{"raters": {"imp": "x"}}', "raters.imp"),  # AttributeError in rater()
        (
            "imported_ratings.json",
            '{"raters": {"imp": {"family": ["qwen"]}}}',
            "raters.imp.family",
        ),  # AttributeError: lower
        ("imported_ratings.json", "[" * 100_000 + "]" * 100_000, None),  # RecursionError
        ("labelstudio_ratings.json", '{"shown_judge": ["j"]}', "shown_judge"),  # a list taken for a name
        ("labelstudio_ratings.json", "[" * 100_000 + "]" * 100_000, None),  # RecursionError
    ],
)
def test_a_damaged_meta_file_is_named(folder, name, text, field):
    (folder / name).write_text(text)
    pd.DataFrame(
        {"case_id": ["c000"], "metric": "f", "rater": ["imp"], "rater_kind": ["judge"], "value": [0.5]}
    ).to_csv(folder / name.replace(".json", ".csv"), index=False)
    with pytest.raises(CampaignError) as raised:
        campaign = load_campaign(folder)
        for rater in campaign.imported_raters:  # what the gate's self-evaluation check does with a family
            (campaign.rater(rater).family or "").lower()
    assert name in str(raised.value) and (field is None or f"field '{field}'" in str(raised.value))


def test_a_model_or_family_a_tool_gave_as_a_number_is_its_text(folder):
    """calibrate import records a model's name as the tool gave it; a number is kept as text (before, a
    family of 5 crashed the self-evaluation check), never stranding the campaign."""
    (folder / "imported_ratings.json").write_text('{"raters": {"imp": {"family": 5, "model": 4}}}')
    (folder / "imported_ratings.csv").write_text("case_id,metric,rater,rater_kind,value\nc000,f,imp,judge,0.5\n")
    rater = load_campaign(folder).rater("imp")
    assert (rater.family, rater.model) == ("5", "4")


@pytest.mark.parametrize(
    "data, message",
    [
        (b"id\nc001\n", "missing column(s) case_id"),  # KeyError: 'case_id'
        (b"case_id\n\xff\n", "not UTF-8 text"),  # 'utf-8' codec can't decode (no file named)
        (b"case_id,stratum\nc001\n", "1 field(s) where the header has 2"),
    ],
)
def test_a_sample_file_given_to_labelstudio_push_is_read_with_its_line(folder, data, message):
    from calibrate.sampling.designs import read_sample_ids

    path = folder / "mine.csv"
    path.write_bytes(data)
    with pytest.raises(CampaignError, match=re.escape(message)) as raised:
        read_sample_ids(path, load_campaign(folder))
    assert str(path) in str(raised.value)


# ---------------------------------------------------------------------------------------- attacks
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=16,
)


def near(document: dict) -> st.SearchStrategy:
    """A document that is nearly right: each field replaced by any JSON, dropped, or kept."""
    return st.fixed_dictionaries({k: st.one_of(st.just(v), json_values) for k, v in document.items()}).flatmap(
        lambda d: st.sets(st.sampled_from(sorted(d))).map(lambda drop: {k: v for k, v in d.items() if k not in drop})
    )


ATTACK = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def survives(folder: Path) -> None:
    """Either the campaign loads and everything reading its samples runs, or a CampaignError names a file."""
    try:
        use(folder)
    except CampaignError as exc:
        assert exc.problems and all(p.file and p.message for p in exc.problems)


@ATTACK
@given(data=st.data(), which=st.sampled_from(["strat", "pilot"]))
def test_attack_sample_designs(template, data, which):
    path = template / "samples" / f"{which}.json"
    original = path.read_bytes()
    document = json.loads(original)
    document = data.draw(
        st.one_of(
            json_values,
            near(document),
            near({**document, "strata": {k: data.draw(near(v)) for k, v in document["strata"].items()}}),
        )
    )
    try:
        path.write_text(json.dumps(document))
        survives(template)
    finally:
        path.write_bytes(original)


@ATTACK
@given(data=st.data())
def test_attack_sample_tables(template, data):
    path = template / "samples" / "strat.csv"
    original = path.read_bytes()
    lines = original.decode().splitlines(keepends=True)
    i = data.draw(st.integers(0, len(lines) - 1))
    cell = st.text(alphabet=st.characters(codec="utf-8"), max_size=8) | st.sampled_from(
        ["nan", "inf", "-0", "1e-400", "0", "1", "0.5", '"', ",", "\r", "\0", "c000", "a", "b"]
    )
    lines[i] = ",".join(data.draw(st.lists(cell, min_size=0, max_size=4))) + "\n"
    try:
        path.write_text("".join(lines), encoding="utf-8", newline="")
        survives(template)
    finally:
        path.write_bytes(original)


@ATTACK
@given(
    name=st.sampled_from(["imported_ratings.json", "labelstudio_ratings.json"]),
    document=st.one_of(
        json_values,
        st.fixed_dictionaries(
            {
                "raters": st.dictionaries(
                    st.sampled_from(["imp", "j", ""]) | st.text(max_size=6),
                    json_values | st.fixed_dictionaries({"family": json_values, "model": json_values}),
                    max_size=3,
                )
            }
        ),
        st.fixed_dictionaries({"shown_judge": json_values}),
    ),
    raw=st.one_of(st.none(), st.binary(max_size=40)),
)
def test_attack_meta_files(template, name, document, raw):
    path, table = template / name, template / name.replace(".json", ".csv")
    try:
        path.write_bytes(raw if raw is not None else json.dumps(document).encode())
        table.write_text("case_id,metric,rater,rater_kind,value\nc000,f,imp,judge,0.5\n")
        try:
            campaign = load_campaign(template)
        except CampaignError as exc:
            assert name in str(exc)
        else:
            assert campaign.shown_judge is None or isinstance(campaign.shown_judge, str)
            for rater, facts in campaign.imported_raters.items():
                assert all(facts[k] is None or isinstance(facts[k], str) for k in ("kind", "model", "family"))
                (campaign.rater(rater).family or "").lower()
    finally:
        path.unlink(missing_ok=True)
        table.unlink(missing_ok=True)


@ATTACK
@given(data=st.binary(max_size=120) | st.text(max_size=60).map(lambda t: ("case_id\n" + t).encode()))
def test_attack_a_sample_file_for_labelstudio_push(template, data, tmp_path_factory):
    from calibrate.sampling.designs import read_sample_ids

    path = tmp_path_factory.mktemp("ids") / "mine.csv"
    path.write_bytes(data)
    try:
        ids = read_sample_ids(path, load_campaign(template))
    except CampaignError as exc:
        assert str(path) in str(exc)
    except ValueError as exc:  # cases not in the campaign
        assert "not in the campaign's cases.jsonl" in str(exc)
    else:
        assert all(isinstance(c, str) and c for c in ids)
