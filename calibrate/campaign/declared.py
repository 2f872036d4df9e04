"""What ``campaign.toml`` declares, read and checked: its name, ``[metrics.NAME]`` (:func:`parse_metric`),
``[raters.NAME]``, and the ``[judges]``, ``[juries]`` and ``[service]`` tables their own modules parse,
into one :class:`Declared` (:func:`parse_config`; :func:`read_declared` reads a folder's campaign.toml
alone, for a command that needs its declarations and not its ratings). Each table is read through its schema
(:mod:`calibrate.campaign.config`); what ties its fields together is checked here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calibrate.base.errors import CampaignError, Problem
from calibrate.campaign.config import CampaignFile, MetricTable, RaterTable, read_toml, table, tables
from calibrate.campaign.judge_settings import parse_judges
from calibrate.campaign.judge_specs import JudgeSpec
from calibrate.campaign.juries import parse_juries
from calibrate.campaign.model import Metric, OutOfScale, Rater, number_text
from calibrate.campaign.service import parse_service

__all__ = ["Declared", "parse_config", "parse_metric", "read_declared", "section"]


def _levels_and_range(
    spec: MetricTable, where: str, file: str, problems: list[Problem]
) -> tuple[tuple[float, ...] | None, tuple[float, float] | None] | None:
    """A metric's levels and range, checked against its scale; None when an ordinal scale lacks its levels."""
    scale = spec.scale
    levels: tuple[float, ...] | None = None
    rng: tuple[float, float] | None = None
    if scale == "binary":
        levels = (0.0, 1.0)
        if spec.levels is not None and list(spec.levels) != [0, 1]:
            problems.append(
                Problem(
                    file,
                    "a binary scale has the levels [0, 1]",
                    field=f"{where}.levels",
                    value=list(spec.levels),
                    expected="[0, 1] or nothing",
                )
            )
    elif scale == "ordinal":
        raw = spec.levels
        if raw is None or len(raw) < 2 or len(set(raw)) != len(raw):
            problems.append(
                Problem(
                    file,
                    "an ordinal scale needs its levels",
                    field=f"{where}.levels",
                    value=None if raw is None else list(raw),
                    expected="a list of at least two distinct numbers, such as [0, 1, 2, 3]",
                )
            )
            return None
        levels = tuple(sorted(float(v) for v in raw))
    if spec.levels is not None and scale == "continuous":
        problems.append(
            Problem(
                file,
                "a continuous scale has no levels",
                field=f"{where}.levels",
                expected="range = [low, high] or nothing",
            )
        )
    if spec.range is not None:
        raw = list(spec.range)
        if scale != "continuous":
            problems.append(Problem(file, "only a continuous scale takes a range", field=f"{where}.range"))
        elif len(raw) != 2 or raw[0] >= raw[1]:
            problems.append(
                Problem(
                    file, "invalid range", field=f"{where}.range", value=raw, expected="[low, high] with low < high"
                )
            )
        else:
            rng = (float(raw[0]), float(raw[1]))
    return levels, rng


def parse_metric(name: str, spec: MetricTable, file: str, problems: list[Problem]) -> Metric | None:
    """A ``[metrics.NAME]`` table (read by :class:`~calibrate.campaign.config.MetricTable`), checked for
    what ties its fields together: levels and range to the scale, ``human_pass`` inside them, both costs."""
    where = f"metrics.{name}"
    scale = spec.scale
    bounds = _levels_and_range(spec, where, file, problems)
    if bounds is None:
        return None
    levels, rng = bounds
    human_pass = spec.human_pass if spec.human_pass is not None else (1 if scale == "binary" else None)
    if human_pass is None:
        problems.append(
            Problem(
                file,
                "human_pass is missing or not a number",
                field=f"{where}.human_pass",
                expected="the lowest human value that counts as a pass",
            )
        )
        return None
    if scale == "binary" and human_pass != 1:
        problems.append(
            Problem(file, "a binary scale passes at 1", field=f"{where}.human_pass", value=human_pass, expected="1")
        )
    low_high = (levels[0], levels[-1]) if levels else rng
    if low_high and not (low_high[0] < human_pass <= low_high[1]):
        problems.append(
            Problem(
                file,
                "human_pass makes every human label a pass or every one a fail",
                field=f"{where}.human_pass",
                value=human_pass,
                expected=f"a value above {number_text(low_high[0])} and at most {number_text(low_high[1])}",
            )
        )
    costs = [spec.cost_false_pass, spec.cost_false_fail]
    if (costs[0] is None) != (costs[1] is None):
        problems.append(
            Problem(
                file,
                "the cost rule needs both costs",
                field=f"{where}.cost_false_pass",
                expected="cost_false_pass and cost_false_fail together",
            )
        )
    return Metric(
        name=name,
        scale=scale,
        human_pass=float(human_pass),
        levels=levels,
        range=rng,
        max_false_pass=spec.max_false_pass,
        cost_false_pass=costs[0],
        cost_false_fail=costs[1],
        description=spec.description,
    )


def section(config: Any, key: str) -> Any:
    """A section of campaign.toml, when it is a table (one that is not was named by the top level's schema)."""
    value = config.get(key) if isinstance(config, dict) else None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class Declared:
    """What campaign.toml declares, read and checked."""

    name: str
    metrics: dict[str, Metric]
    raters: dict[str, Rater]
    judges: dict[str, JudgeSpec]
    out_of_scale: OutOfScale
    juries: dict[str, dict[str, Any]]
    service: Any


def parse_config(config: Any, file: str) -> Declared:
    """campaign.toml read through its schemas (:mod:`calibrate.campaign.config`): the top level, every
    ``[metrics.NAME]``, ``[raters.NAME]`` and ``[judges.NAME]``, and the rules across their fields; every
    problem of every table listed in one :class:`CampaignError`."""
    problems: list[Problem] = []
    top = table(config, CampaignFile, "", file, problems)
    name = top.name if top is not None else None
    if top is not None and not top.name.strip():
        problems.append(
            Problem(file, "the campaign needs a name", field="name", value=top.name, expected='name = "..."')
        )
    metric_specs = tables(section(config, "metrics"), MetricTable, "metrics", file, problems)
    metrics = {n: m for n, s in metric_specs.items() if (m := parse_metric(n, s, file, problems))}
    raters = {
        n: Rater(
            name=n,
            family=r.family,
            model=r.model,
            higher_is_better=r.higher_is_better,
            on_metric_scale=r.on_metric_scale,
            description=r.description,
        )
        for n, r in tables(section(config, "raters"), RaterTable, "raters", file, problems).items()
    }
    declared = set(metrics) | set(section(config, "metrics") or {})  # a metric with a problem is reported once
    judges = parse_judges(section(config, "judges"), declared, file, problems)
    juries = parse_juries(section(config, "juries"), file, problems)
    service = parse_service(section(config, "service"), file, problems)
    if problems:
        raise CampaignError(problems)
    return Declared(name, metrics, raters, judges, top.out_of_scale, juries, service)


def read_declared(folder: str | Path) -> Declared:
    """What the campaign ``folder``'s campaign.toml declares, read and checked as
    :func:`~calibrate.campaign.load.load_campaign` reads it, without reading its ratings or cases (an
    import needs the metrics first, and loads the campaign once, as it would leave it).

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "campaign.toml").write_text('name = "c"\\n[metrics.faithfulness]\\nscale = "binary"\\nhuman_pass = 1\\n')
    >>> sorted(read_declared(folder).metrics)
    ['faithfulness']
    """
    path = Path(folder) / "campaign.toml"
    return parse_config(read_toml(path), str(path))
