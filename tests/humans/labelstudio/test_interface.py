"""The annotators' instructions of a Label Studio project: each metric's guideline, worded for its scale,
rendered from Markdown to HTML (not Markdown source in a <pre>), with the campaign's own text escaped.
No server needed (tests/humans/labelstudio/test_client.py and tests/humans/test_labelstudio_browser.py check what Label
Studio keeps and shows)."""

import re

import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from calibrate.campaign import Campaign, campaign_from_frames
from calibrate.humans.labelstudio.interface import KINDS, InterfaceError, build_interface

#: the tags CommonMark produces; anything else in the instructions came from the campaign's text unescaped
BLOCK_TAGS = {
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "p",
    "ul",
    "ol",
    "li",
    "strong",
    "em",
    "code",
    "pre",
    "a",
    "img",
    "br",
    "hr",
    "blockquote",
}


def campaign(metrics: dict) -> Campaign:
    name = next(iter(metrics))
    return campaign_from_frames(
        {"name": "n", "metrics": metrics},
        pd.DataFrame({"case_id": ["a"], "metric": name, "rater": "h", "rater_kind": "human", "value": [1]}),
    )


def text_of(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def bold(html: str) -> set[str]:
    return set(re.findall(r"<strong>(.*?)</strong>", html))


EVERY_KIND = {
    "faithfulness": {"scale": "binary"},
    "answer_relevancy": {"scale": "binary"},
    "contextual_relevancy": {"scale": "continuous", "range": [0, 1], "human_pass": 0.5},
    "contextual_precision": {"scale": "continuous", "range": [0, 1], "human_pass": 0.5},
    "contextual_recall": {"scale": "continuous", "range": [0, 1], "human_pass": 0.5},
    "politeness": {"scale": "ordinal", "levels": [0, 1, 2], "human_pass": 1, "description": "Is the answer polite?"},
}


def test_the_instructions_are_html_rendered_from_every_guideline_not_markdown_in_pre():
    ui = build_interface(campaign(EVERY_KIND))
    html = ui.instructions
    assert "<pre" not in html and "**" not in html and "&lt;" not in html
    headings = re.findall(r"<h3>(.*?)</h3>", html)
    assert headings == [
        "Answer relevancy: does the answer address the question?",
        "Contextual precision: was each retrieved chunk useful to reach the expected answer?",
        "Contextual recall: is each part of the expected answer found in the retrieved contexts?",
        "Contextual relevancy: is each retrieved chunk relevant to the question?",
        "Faithfulness: is every claim in the answer supported by the retrieved contexts?",
        "Politeness: Is the answer polite?",
    ]
    assert {"pass", "fail", "relevant", "not relevant", "found", "not found"} <= bold(html)
    assert html.count("<hr>") == 5 and html.count("<ul>") >= 6 and "<h1>" not in html  # too large in Label Studio
    assert "{{" not in html and "{%" not in html


def test_each_guideline_names_only_the_verdicts_its_interface_offers():
    """A binary answer relevancy is pass/fail: its guideline speaks of no rating level (it spoke of 4-5);
    a 1-N rating's guideline names 1 and N; every bold verdict is a value the control offers."""
    binary = build_interface(campaign({"answer_relevancy": {"scale": "binary"}}))
    assert bold(binary.instructions) == {"pass", "fail"} == set(binary.controls["answer_relevancy"].values)
    assert not re.search(r"\b\d\b", text_of(binary.instructions)), text_of(binary.instructions)
    for top in (3, 5, 7):
        rating = build_interface(
            campaign({"answer_relevancy": {"scale": "ordinal", "levels": list(range(1, top + 1)), "human_pass": 2}})
        )
        assert bold(rating.instructions) == {"1", str(top)}
        assert f"from 1 to {top}" in text_of(rating.instructions)
        assert "pass" not in bold(rating.instructions)
    for spec, offered in (
        ({"scale": "binary"}, {"pass", "fail"}),
        ({"scale": "ordinal", "levels": [0, 1, 2, 3], "human_pass": 2}, {"0", "1", "2", "3"}),
        ({"scale": "continuous", "range": [1, 7.5], "human_pass": 4}, {"1", "7.5"}),
    ):
        custom = build_interface(campaign({"tone": {**spec, "description": "Is the tone right?"}}))
        assert bold(custom.instructions) == offered, spec
        assert "<h3>Tone: Is the tone right?</h3>" in custom.instructions
    for kind in set(KINDS.values()) - {"answer_relevancy"}:
        ui = build_interface(campaign({kind: EVERY_KIND[kind]}))
        offered = {v for c in ui.controls.values() for v in c.values} - {"unsupported"}
        assert bold(ui.instructions) == offered, kind


@settings(max_examples=200, deadline=None)
@given(description=st.text(max_size=80))
@example("<script>alert(1)</script> <img src=x onerror=alert(1)>")
@example("[x](javascript:alert(1)) [y](vbscript:msgbox) <a href='javascript:alert(1)'>z</a>")
@example("{{ 7 * 7 }} {% if x %} # heading\n- item | pipe \u202eRTL\r\n```\ncode")
@example("Is it polite?\x00")
def test_a_campaigns_description_never_becomes_markup_of_its_own(description):
    """Whatever the description (brackets, markup, NUL, newlines, Jinja2 syntax), the instructions hold only
    the tags CommonMark makes, with no event handler, script link or template left unrendered; a character
    XML cannot hold (a control character) is an error naming the metric, not a parser's traceback."""
    spec = campaign({"tone": {"scale": "binary", "description": description or "q?"}})
    if re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]", description):
        with pytest.raises(InterfaceError, match=r"metric tone: its description holds U\+"):
            build_interface(spec)
        return
    ui = build_interface(spec)
    if "{{ 7 * 7 }}" in description:
        assert "{{ 7 * 7 }}" in ui.instructions  # shown as written, not evaluated
    tags = {t.lower() for t in re.findall(r"<\s*/?\s*([A-Za-z][A-Za-z0-9]*)", ui.instructions)}
    assert tags <= BLOCK_TAGS, tags
    for attributes in re.findall(r"<[a-z0-9]+(\s[^>]*)>", ui.instructions):
        names = set(re.findall(r"\s([a-zA-Z-]+)=", attributes))
        assert names <= {"href", "src", "alt", "title"}, attributes
        assert "javascript:" not in attributes.lower() and "vbscript:" not in attributes.lower()
