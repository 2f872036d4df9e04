"""Errors that name the file, the row, the field, the value found and what was expected."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Problem", "CampaignError", "FileError", "StoreError", "FolderInUse"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a user's input."""

    file: str
    message: str
    row: int | None = None      # the line number in a text file (the header is line 1 of a CSV)
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
    """A campaign that cannot be used as it is; ``problems`` lists every problem found."""

    max_listed = 50

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        lines = [str(p) for p in self.problems[: self.max_listed]]
        more = len(self.problems) - len(lines)
        if more > 0:
            lines.append(f"... and {more} more problems")
        count = len(self.problems)
        super().__init__(f"{count} problem{'s' if count != 1 else ''} in the campaign:\n  " + "\n  ".join(lines))


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
    """A campaign folder that another calibrate process is working on (one judge run at a time)."""
