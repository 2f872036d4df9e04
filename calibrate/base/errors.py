"""Errors that name the file, the row, the field, the value found and what was expected."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NO_VALUE", "CampaignError", "FileError", "FolderInUse", "ParameterText", "Problem", "StoreError"]

#: A parameter named in a message without its value: put it in parentheses, "give the one it runs at
#: ({threshold})", which reads "(threshold)" to a library caller and "(--threshold)" on the command line.
NO_VALUE = object()


class ParameterText(str):
    """An error message that names a function's parameters, and the same message for the command line,
    which names its flags.

    The template's ``{name}`` fields are the parameters: given a value, the library's text reads
    ``name='value'`` and the command line's ``--name value``; ``True`` reads ``name=True`` and
    ``--name``; :data:`NO_VALUE` reads ``name`` and ``--name``. Raise any exception with it; the
    command line shows :meth:`for_command_line`. A field whose name starts with ``_`` is text, shown
    as it is in both (the way to put a user's names, which may hold braces, in a message).

    Examples
    --------
    >>> text = ParameterText("{by}: slicing needs cases.jsonl", by="topic")
    >>> str(text), text.for_command_line()
    ("by='topic': slicing needs cases.jsonl", '--by topic: slicing needs cases.jsonl')
    >>> ParameterText("give the one it runs at ({threshold})", threshold=NO_VALUE).for_command_line({"threshold": "-t"})
    'give the one it runs at (-t)'
    """

    def __new__(cls, template: str, /, **values: object) -> ParameterText:
        text = super().__new__(cls, template.format(**{k: cls._library(k, v) for k, v in values.items()}))
        text.template, text.values = template, values
        return text

    @staticmethod
    def _library(name: str, value: object) -> str:
        if name.startswith("_"):
            return str(value)
        return name if value is NO_VALUE else f"{name}={value!r}"

    @classmethod
    def join(cls, separator: str, parts: list[str]) -> ParameterText:
        """The parts (plain texts or parameter texts) joined into one parameter text."""
        templates, values = [], {}
        for i, part in enumerate(parts):
            if isinstance(part, ParameterText):
                renamed = {k: f"_{i}_{k}" if k.startswith("_") else k for k in part.values}
                templates.append(
                    part.template.replace("{{", "\0")
                    .replace("}}", "\1")
                    .format(**{k: "{" + v + "}" for k, v in renamed.items()})
                    .replace("\0", "{{")
                    .replace("\1", "}}")
                )
                values |= {renamed[k]: v for k, v in part.values.items()}
            else:
                templates.append(f"{{_{i}}}")
                values[f"_{i}"] = part
        return cls(separator.replace("{", "{{").replace("}", "}}").join(templates), **values)

    def for_command_line(self, flags: dict[str, str] | None = None) -> str:
        """The message with each parameter as its flag (``flags`` maps the names that differ)."""

        def flag(name: str, value: object) -> str:
            if name.startswith("_"):
                return str(value)
            option = (flags or {}).get(name, "--" + name.replace("_", "-"))
            return option if value is NO_VALUE or value is True else f"{option} {value}"

        return self.template.format(**{k: flag(k, v) for k, v in self.values.items()})


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a user's input.

    Parameters
    ----------
    file : str
    message : str
    row : int, optional
        The line in the file (the header is line 1 of a CSV).
    field : str, optional
    value : object, optional
        The value found.
    expected : str, optional
        What was expected instead.

    Examples
    --------
    >>> str(Problem("ratings.csv", "not a number", row=3, field="value", value="x", expected="a number"))
    "ratings.csv, line 3, field 'value': not a number (found 'x'); expected a number"
    """

    file: str
    message: str
    row: int | None = None  # the line number in a text file (the header is line 1 of a CSV)
    field: str | None = None
    value: object = None
    expected: str | None = None

    def __str__(self) -> str:
        where = self.file + (f", line {self.row}" if self.row is not None else "")
        where += f", field '{self.field}'" if self.field else ""
        text = f"{where}: {self.message}"
        if self.value is not None:
            text += f" (found {self.value!r})"
        if self.expected:
            text += f"; expected {self.expected}"
        return text


class CampaignError(ValueError):
    """A campaign that cannot be used as it is; ``problems`` lists every problem found.

    Parameters
    ----------
    problems : list of Problem
        Every problem found (the message lists the first 50).

    Examples
    --------
    >>> error = CampaignError([Problem("campaign.toml", "no metric")])
    >>> error.problems[0].message, str(error).splitlines()
    ('no metric', ['1 problem in the campaign:', '  campaign.toml: no metric'])
    """

    max_listed = 50

    def __init__(self, problems: list[Problem], *, heading: str = "the campaign"):
        self.problems = list(problems)
        lines = [str(p) for p in self.problems[: self.max_listed]]
        more = len(self.problems) - len(lines)
        if more > 0:
            lines.append(f"... and {more} more problems")
        count = len(self.problems)
        super().__init__(f"{count} problem{'s' if count != 1 else ''} in {heading}:\n  " + "\n  ".join(lines))


class FileError(RuntimeError):
    """A file calibrate must read or write and cannot: the message names the file, what is wrong and
    what to do. Nothing the file held is lost by the failure."""

    def __init__(self, path: object, problem: str, todo: str):
        self.path, self.problem, self.todo = str(path), problem, todo
        super().__init__(f"{self.path}: {problem}; {todo}")


class StoreError(FileError):
    """A campaign store (SQLite) that is damaged, locked, read-only or on a full disk.

    ``kind`` is one of ``"damaged"``, ``"locked"``, ``"read-only"``, ``"full"``, ``"unreadable"``."""

    def __init__(self, path: object, kind: str, problem: str, todo: str):
        self.kind = kind
        super().__init__(path, problem, todo)


class FolderInUse(FileError):
    """A campaign folder that another writer still holds after the wait (one writer at a time: see
    :func:`calibrate.base.files.holding`)."""
