"""A new campaign folder: a commented ``campaign.toml`` for the user's metrics (``calibrate init``)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from calibrate.base.errors import NO_VALUE, CampaignError, ParameterText, Problem
from calibrate.base.files import holding, replacing
from calibrate.campaign.load import load_campaign
from calibrate.campaign.model import RATING_COLUMNS

__all__ = ["init_campaign", "parse_metric"]

SCALES = ("binary", "ordinal", "continuous")


def parse_metric(text: str) -> tuple[str, dict]:
    """``NAME[:SCALE[:VALUES]]`` (as ``calibrate init --metric`` takes it) -> the metric's name and table.

    ``binary`` is the default scale; an ordinal metric lists its levels (``relevance:ordinal:0,1,2,3``),
    a continuous one may give its range (``helpfulness:continuous:1,5``).

    Examples
    --------
    >>> parse_metric("faithfulness"), parse_metric("relevance:ordinal:0,1,2,3")
    (('faithfulness', {'scale': 'binary'}), ('relevance', {'scale': 'ordinal', 'levels': [0, 1, 2, 3]}))
    """
    name, _, rest = text.partition(":")
    scale, _, values = rest.partition(":")
    scale = scale or "binary"
    if not name.strip():
        raise ValueError(ParameterText("{metrics}: a metric needs a name (NAME[:SCALE[:VALUES]])", metrics=text))
    if scale not in SCALES:
        raise ValueError(
            ParameterText(
                "{metrics}: the scale {_scale} is not one of {_known}",
                metrics=text,
                _scale=repr(scale),
                _known=", ".join(SCALES),
            )
        )
    try:
        numbers = [float(v) for v in values.split(",")] if values else []
    except ValueError:
        raise ValueError(
            ParameterText(
                "{metrics}: the values {_values} are not numbers separated by commas",
                metrics=text,
                _values=repr(values),
            )
        ) from None
    numbers = [int(v) if v.is_integer() else v for v in numbers]
    table: dict = {"scale": scale}
    if scale == "ordinal":
        if len(numbers) < 2 or sorted(set(numbers)) != numbers:
            raise ValueError(
                ParameterText(
                    "{metrics}: an ordinal metric lists its levels in increasing order, e.g. relevance:ordinal:0,1,2,3",
                    metrics=text,
                )
            )
        table["levels"] = numbers
    elif scale == "continuous" and numbers:
        if len(numbers) != 2 or not numbers[0] < numbers[1]:
            raise ValueError(
                ParameterText(
                    "{metrics}: a continuous metric's range is LOW,HIGH, e.g. helpfulness:continuous:1,5", metrics=text
                )
            )
        table["range"] = numbers
    elif numbers:
        raise ValueError(
            ParameterText("{metrics}: a binary metric takes no values (its labels are 0 and 1)", metrics=text)
        )
    return name.strip(), table


def _key(name: str) -> str:
    """``name`` as a TOML basic string: JSON's escapes are TOML's, and DEL, which JSON leaves as it is and
    TOML forbids, is escaped too.

    >>> print(_key('say "hi"\x7f'))
    "say \\"hi\\"\\u007f"
    """
    return json.dumps(name, ensure_ascii=False).replace("\x7f", "\\u007f")


def _metric_block(name: str, table: Mapping) -> str:
    scale = table["scale"]
    lines = [f"[metrics.{_key(name)}]", f'scale = "{scale}"            # the scale of the HUMAN labels']
    if scale == "binary":
        lines.append("human_pass = 1              # a human label of 1 is a pass, 0 a fail")
    elif scale == "ordinal":
        levels = list(table["levels"])
        lines += [
            f"levels = {json.dumps(levels)}",
            f"human_pass = {levels[len(levels) // 2]}" + " " * 10 + "# CHECK: the lowest level that counts as a pass",
        ]
    else:
        if "range" in table:
            low, high = table["range"]
            lines.append(f"range = {json.dumps([low, high])}            # human values outside it are errors")
            middle = (low + high) / 2
        else:
            middle = 0.5
        lines.append(f"human_pass = {middle:g}" + " " * 8 + "# CHECK: the lowest human value that counts as a pass")
    lines += [
        "# How a threshold is chosen for the judges of this metric (one of the two; the second commented):",
        "max_false_pass = 0.10       # CHECK: the share of human fails a judge may pass",
        "# cost_false_pass = 5       # or: what a false pass costs against a false fail",
        "# cost_false_fail = 1",
    ]
    return "\n".join(lines)


def campaign_toml(name: str, metrics: Mapping[str, Mapping]) -> str:
    """The text :func:`init_campaign` writes."""
    blocks = [
        f"""# A calibrate campaign. Lines marked CHECK hold a default to look at.
# The format is in the README ("The campaign format"); `calibrate validate FOLDER` checks it.
name = {_key(name)}
out_of_scale = "error"       # a label outside its metric's scale: "error" | "clip" | "drop"
"""
    ]
    blocks += [_metric_block(metric, table) for metric, table in metrics.items()]
    blocks.append("""# Facts about a rater (optional): a judge of the generator's own family is flagged.
# [raters.gpt4o-judge]
# family = "gpt"
# model = "gpt-4o-2024-08-06"
# higher_is_better = true     # false for a score such as a hallucination probability

# The judges `calibrate judge` runs (optional; see the README, "Running judges"):
# [judges.deepeval-faithfulness-gpt4o]
# library = "deepeval"
# metric = "faithfulness"      # scored into the campaign metric of that name unless into = "..."
# model = { provider = "openai", name = "gpt-4o-2024-08-06", api_key_env = "OPENAI_API_KEY" }
""")
    return "\n\n".join(blocks)


def init_campaign(
    folder: str | Path, metrics: Mapping[str, Mapping] | Sequence[str], *, name: str | None = None
) -> Path:
    """The ``calibrate init`` command: a new campaign folder with a commented ``campaign.toml`` and an
    empty ``ratings.csv`` (its header only) for the labels to come.

    Parameters
    ----------
    folder : str or Path
        The folder to make; one that exists is refused (nothing in it is touched).
    metrics : mapping or sequence of str
        The metrics: name -> table (``{"scale": "ordinal", "levels": [0, 1, 2, 3]}``), or texts
        ``NAME[:SCALE[:VALUES]]`` (:func:`parse_metric`).
    name : str, optional
        The campaign's name (default: the folder's).

    Returns
    -------
    Path
        The ``campaign.toml`` written; the folder loads with :func:`~calibrate.load_campaign`, and
        ``calibrate cases import`` and ``calibrate collect`` fill it.

    Examples
    --------
    >>> import tempfile, calibrate
    >>> path = init_campaign(Path(tempfile.mkdtemp()) / "support-bot", ["faithfulness", "relevance:ordinal:0,1,2,3"])
    >>> c = calibrate.load_campaign(path.parent)
    >>> c.name, sorted(c.metrics), c.metrics["relevance"].human_pass, c.metrics["faithfulness"].max_false_pass
    ('support-bot', ['faithfulness', 'relevance'], 2.0, 0.1)
    """
    folder = Path(folder)
    taken = CampaignError(
        [
            Problem(
                str(folder),
                "exists already: a new campaign gets a new folder",
                expected="a folder name not yet taken (nothing in this one was changed)",
            )
        ]
    )
    if folder.exists():
        raise taken
    tables = dict(parse_metric(m) for m in metrics) if not isinstance(metrics, Mapping) else dict(metrics)
    if not tables:
        raise ValueError(ParameterText("a campaign needs at least one metric: name it ({metrics})", metrics=NO_VALUE))
    text = campaign_toml(name or folder.name, tables)
    try:
        folder.mkdir(parents=True)  # one of two inits at once makes it; the other is refused here
    except FileExistsError:
        raise taken from None
    path = folder / "campaign.toml"
    try:
        with holding(folder, "calibrate init"):
            with replacing(folder / "ratings.csv") as handle:
                handle.write(",".join(RATING_COLUMNS) + "\n")
            with replacing(path) as handle:  # the campaign last: a folder without it is no campaign yet
                handle.write(text)
            load_campaign(folder)
    except BaseException:  # a name the format cannot hold, a full disk: leave nothing behind
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return path
