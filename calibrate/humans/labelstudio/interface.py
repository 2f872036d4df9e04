"""The Label Studio labeling interface of a campaign, built from the templates in ``annotations/``.

Each campaign metric gets the template of its kind (faithfulness, answer relevancy, contextual
relevancy / precision per retrieved chunk, contextual recall per part of the expected answer, or a
custom criterion on the metric's scale). The generated XML is also what a pulled annotation is
checked against: :class:`Interface` reads its control tags back, so a result naming an unknown
control, or a choice the interface does not offer, is an error (Label Studio itself accepts both).
Each metric's guideline (``annotations/KIND.md``, Markdown through Jinja2, worded for the metric's
scale) becomes the project's instructions as HTML (:func:`render_markdown`). No network here.

Examples
--------
>>> from calibrate.campaign import campaign_from_frames
>>> import pandas as pd
>>> c = campaign_from_frames({"name": "n", "metrics": {"faithfulness": {"scale": "binary"}}},
...     pd.DataFrame({"case_id": ["a"], "metric": "faithfulness", "rater": "h", "rater_kind": "human", "value": [1]}))
>>> ui = build_interface(c)
>>> ui.controls["faithfulness"].values
('pass', 'fail')
>>> ui.instructions.count("<h3>"), "<strong>pass</strong>" in ui.instructions, "**" in ui.instructions
(1, True, False)
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import FiniteFloat

from calibrate.base.documents import Schema, parse_json
from calibrate.campaign import Campaign, Metric

__all__ = [
    "KINDS",
    "Control",
    "ControlRecord",
    "Interface",
    "InterfaceError",
    "InterfaceRecord",
    "build_interface",
    "metric_kind",
    "read_interface_record",
    "render_markdown",
    "task_data",
]

TEMPLATES = Path(__file__).resolve().parent / "annotations"
#: campaign metric name -> the template (kind) that labels it; any other name is a custom criterion
KINDS = {
    "faithfulness": "faithfulness",
    "answer_relevancy": "answer_relevancy",
    "contextual_relevancy": "contextual_relevancy",
    "context_relevance": "contextual_relevancy",
    "contextual_precision": "contextual_precision",
    "context_precision": "contextual_precision",
    "contextual_recall": "contextual_recall",
    "context_recall": "contextual_recall",
}
PER_ITEM = {
    "contextual_relevancy": "retrieval_context",
    "contextual_precision": "retrieval_context",
    "contextual_recall": "expected_parts",
}
NEEDS_EXPECTED = {"contextual_precision", "contextual_recall"}
CONTROL_TAGS = {"Choices": "choices", "Labels": "labels", "Rating": "rating", "Number": "number"}


class InterfaceError(ValueError):
    """A campaign metric that its labeling interface cannot serve as declared."""


def metric_kind(name: str) -> str:
    """The template kind of a campaign metric.

    Examples
    --------
    >>> metric_kind("context_precision"), metric_kind("politeness")
    ('contextual_precision', 'custom')
    """
    return KINDS.get(name, "custom")


@dataclass(frozen=True)
class Control:
    """A control tag of the interface: what a result may say."""

    name: str  # for a control repeated per item, the name with {idx}
    type: str  # the result type: choices, labels, rating, number
    to_name: str
    values: tuple[str, ...] = ()  # choices or labels offered
    max_rating: int | None = None
    bounds: tuple[float, float] | None = None
    repeated_over: str | None = None  # the task data list a <Repeater> runs over

    def pattern(self) -> re.Pattern:
        return re.compile("^" + re.escape(self.name).replace(re.escape("{idx}"), r"(\d+)") + "$")

    @property
    def metric(self) -> str:
        """The campaign metric the control answers (a metric's extra controls are named ``METRIC__...``)."""
        return self.name.split("__", 1)[0]


@dataclass
class Interface:
    """A campaign's labeling interface: the XML Label Studio gets, its controls, and the annotators'
    instructions (the metrics' guidelines, HTML)."""

    xml: str
    metrics: dict[str, str]  # campaign metric -> kind
    controls: dict[str, Control] = field(default_factory=dict)
    instructions: str = ""

    def record(self) -> str:
        """The interface as calibrate records it in its label store (JSON: the metrics and their controls),
        read back by :func:`read_interface_record`: what a project had, when campaign.toml no longer has it."""
        return json.dumps(
            {"metrics": self.metrics, "controls": [asdict(c) for c in self.controls.values()]}, sort_keys=True
        )

    def joined(self, other: Interface, metrics: Iterable[str]) -> Interface:
        """This interface with ``metrics`` of ``other`` and their controls added (those it has already are
        kept as they are here).

        Examples
        --------
        >>> a = Interface("", {"f": "faithfulness"}, {"f": Control("f", "choices", "answer", ("pass", "fail"))})
        >>> b = Interface("", {"t": "custom"}, {"t": Control("t", "rating", "answer", max_rating=5)})
        >>> sorted(a.joined(b, ["t", "x"]).controls), a.joined(b, ["t"]).metrics
        (['f', 't'], {'f': 'faithfulness', 't': 'custom'})
        """
        added = [m for m in metrics if m in other.metrics and m not in self.metrics]
        return Interface(
            xml=self.xml,
            metrics={**self.metrics, **{m: other.metrics[m] for m in added}},
            controls={
                **self.controls,
                **{n: c for n, c in other.controls.items() if c.metric in added and n not in self.controls},
            },
            instructions=self.instructions,
        )

    def find(self, from_name: str) -> tuple[Control, int | None] | None:
        """The control a result's ``from_name`` refers to, with its item index when repeated."""
        if from_name in self.controls:
            return self.controls[from_name], None
        for control in self.controls.values():
            if control.repeated_over:
                found = control.pattern().match(from_name)
                if found:
                    return control, int(found.group(1))
        return None


class ControlRecord(Schema):
    """A control as :meth:`Interface.record` writes it."""

    name: str
    type: Literal["choices", "labels", "rating", "number"]
    to_name: str
    values: tuple[str, ...] = ()
    max_rating: int | None = None
    bounds: tuple[FiniteFloat, FiniteFloat] | None = None
    repeated_over: str | None = None


class InterfaceRecord(Schema):
    """An interface as :meth:`Interface.record` writes it: the metrics (name -> kind) and their controls."""

    metrics: dict[str, str]
    controls: list[ControlRecord]


def read_interface_record(text: str, *, source: str) -> Interface:
    """An interface :meth:`Interface.record` wrote (its XML is not kept: only what a pull checks results
    against), read through :class:`InterfaceRecord`.

    Raises
    ------
    DocumentError
        Text that is not such a record, naming ``source`` and the field.

    Examples
    --------
    >>> ui = Interface("", {"t": "custom"}, {"t": Control("t", "rating", "answer", max_rating=5)})
    >>> read_interface_record(ui.record(), source="store").controls == ui.controls
    True
    """
    record = parse_json(text, InterfaceRecord, source=source, expected="the interface calibrate recorded")
    return Interface(
        xml="", metrics=dict(record.metrics), controls={c.name: Control(**c.model_dump()) for c in record.controls}
    )


def _environment():
    import jinja2

    # the XML templates escape what they insert; the Markdown guidelines do not (render_markdown escapes)
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=jinja2.select_autoescape(enabled_extensions=("xml",), default=False),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def render_markdown(text: str) -> str:
    """Markdown as the HTML Label Studio shows as a project's instructions: CommonMark, with raw HTML in
    the text escaped (shown as written, never run) and javascript:, vbscript:, file: and (but for
    images) data: links left as text. Headings are set two levels down, ``#`` as ``<h3>`` (Label Studio
    keeps the tags, drops every style attribute, and shows an ``<h1>`` too large for its window).

    Examples
    --------
    >>> print(render_markdown("# Tone\\n\\n- **pass**: <b>every</b> claim"))
    <h3>Tone</h3>
    <ul>
    <li><strong>pass</strong>: &lt;b&gt;every&lt;/b&gt; claim</li>
    </ul>
    <BLANKLINE>
    >>> render_markdown("[x](javascript:alert(1))").strip()
    '<p>[x](javascript:alert(1))</p>'
    """
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark", {"html": False})
    tokens = parser.parse(text)
    for token in tokens:
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + 2, 6)}"
    return parser.renderer.render(tokens, parser.options, {})


#: characters XML 1.0 cannot hold (control characters other than tab and newlines, U+FFFE, U+FFFF)
NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _check(metric: Metric, kind: str) -> list[str]:
    bad = NOT_XML.search(metric.description or "")
    if bad:
        return [
            f"metric {metric.name}: its description holds U+{ord(bad.group()):04X}, a character Label Studio's "
            "interface (XML) cannot hold: remove it from campaign.toml"
        ]
    if kind in PER_ITEM and metric.scale != "continuous":
        return [
            f"metric {metric.name} is labelled per {'chunk' if kind != 'contextual_recall' else 'part'}, which "
            f'gives a share: declare it scale = "continuous" with a human_pass (it is {metric.scale})'
        ]
    if (
        kind == "answer_relevancy"
        and metric.scale != "binary"
        and not (metric.levels and min(metric.levels) >= 1 and all(float(v).is_integer() for v in metric.levels))
    ):
        return [f"metric {metric.name} is labelled pass/fail (binary) or on a 1-N rating (ordinal with levels 1..N)"]
    if kind == "custom" and metric.scale == "continuous" and metric.range is None:
        return [f"metric {metric.name} is a continuous custom criterion: declare its range"]
    return []


def build_interface(campaign: Campaign, metrics: list[str] | None = None) -> Interface:
    """The labeling interface for the campaign's metrics (all, or those named), in a stable order."""
    names = sorted(metrics or campaign.metrics)
    problems = [f"unknown metric {n}" for n in names if n not in campaign.metrics]
    kinds = {n: metric_kind(n) for n in names if n in campaign.metrics}
    problems += [p for n, kind in kinds.items() for p in _check(campaign.metrics[n], kind)]
    if problems:
        raise InterfaceError("; ".join(problems))
    env = _environment()
    parts = [env.get_template("header.xml").render(expected=any(k in NEEDS_EXPECTED for k in kinds.values()))]
    guidelines: list[str] = []
    for name, kind in kinds.items():
        metric = campaign.metrics[name]
        levels = [_fmt(v) for v in metric.levels] if metric.levels else None
        values = dict(
            name=name,
            title=name.replace("_", " ").capitalize(),
            scale=metric.scale,
            levels=levels,
            range=metric.range,
            max_rating=int(max(metric.levels)) if metric.levels else 5,
            question=metric.description or "how well does the answer meet this criterion?",
        )
        parts.append(env.get_template(f"{kind}.xml").render(**values))
        guideline = render_markdown(env.get_template(f"{kind}.md").render(**values))
        if guideline not in guidelines:
            guidelines.append(guideline)
    xml = "<View>\n" + "\n".join(p.strip() for p in parts) + "\n</View>\n"
    return Interface(xml=xml, metrics=kinds, controls=_controls(xml), instructions="<hr>\n".join(guidelines))


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _controls(xml: str) -> dict[str, Control]:
    """The control tags of an interface, read back from its XML."""
    controls: dict[str, Control] = {}

    def visit(element: ET.Element, repeated_over: str | None) -> None:
        if element.tag == "Repeater":
            repeated_over = element.get("on", "").lstrip("$")
        kind = CONTROL_TAGS.get(element.tag)
        if kind:
            name = element.get("name", "").replace("{{idx}}", "{idx}")
            values = tuple(child.get("value", "") for child in element if child.tag in ("Choice", "Label"))
            bounds = (
                (float(element.get("min")), float(element.get("max")))
                if element.tag == "Number" and element.get("min") is not None
                else None
            )
            controls[name] = Control(
                name=name,
                type=kind,
                to_name=element.get("toName", "").replace("{{idx}}", "{idx}"),
                values=values,
                max_rating=int(element.get("maxRating", 5)) if element.tag == "Rating" else None,
                bounds=bounds,
                repeated_over=repeated_over if "{idx}" in name else None,
            )
        for child in element:
            visit(child, repeated_over)

    visit(ET.fromstring(xml), None)
    return controls


def split_parts(text: str) -> list[str]:
    """The parts of an expected answer that contextual recall asks about: its sentences.

    Examples
    --------
    >>> split_parts("It was built in 1889. It is 330 m tall!  ")
    ['It was built in 1889.', 'It is 330 m tall!']
    """
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def task_data(case_id: str, case: dict[str, Any]) -> dict[str, Any]:
    """What a Label Studio task holds for a case: its fields, and the derived views the templates show
    (contexts numbered in rank order, the expected answer split into parts). No judge score."""
    contexts = [str(c) for c in case.get("retrieval_context") or []]
    data = {
        "case_id": case_id,
        "input": str(case.get("input") or ""),
        "actual_output": str(case.get("actual_output") or ""),
        "expected_output": str(case.get("expected_output") or ""),
        "retrieval_context": contexts,
        "contexts_text": "\n\n".join(f"[{rank}] {text}" for rank, text in enumerate(contexts, start=1)),
        "expected_parts": split_parts(str(case.get("expected_output") or "")),
    }
    return data
