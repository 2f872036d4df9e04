"""Write calibrate/__init__.pyi, the typed face of calibrate's lazy top-level names, and the documentation's
API reference page (docs/reference/api.md), both from ``_EXPORTS``.

    .venv/bin/python scripts/write_api_stub.py [--check]

``calibrate/__init__.py`` imports nothing heavy on import: each public name is looked up in ``_EXPORTS``
when first used (``__getattr__``). Type checkers cannot follow that, so the stub says where each name
comes from (``from module import name as name``), and mypy, pyright and editors see the real signatures.
``--check`` exits 1 when the stub on disk is not the one ``_EXPORTS`` gives (tests/test_api_stub.py runs it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUB = ROOT / "calibrate" / "__init__.pyi"
API_PAGE = ROOT / "docs" / "reference" / "api.md"
INIT = ROOT / "calibrate" / "__init__.py"


def stub_text(exports: dict[str, tuple[str, str]]) -> str:
    """The stub for ``exports`` (name -> (module, attribute)), in the order of the flow."""
    lines = [
        '"""The typed face of calibrate\'s lazy top-level names (written by scripts/write_api_stub.py from',
        '``_EXPORTS`` in calibrate/__init__.py; do not edit by hand)."""',
        "",
    ]
    for name, (module, attribute) in exports.items():
        lines.append(f"from {module} import {attribute} as {name}")
    lines += ["", "DISTRIBUTION: str", "_EXPORTS: dict[str, tuple[str, str]]", "__version__: str", "", "__all__ = ["]
    lines += [f'    "{name}",' for name in sorted(exports)]
    lines += ["]", ""]
    return "\n".join(lines)


def groups(source: str) -> list[tuple[str, list[str]]]:
    """(comment, names) of ``_EXPORTS`` as calibrate/__init__.py writes it: each ``# comment`` line opens a
    group of the names after it."""
    found: list[tuple[str, list[str]]] = []
    body = source[source.index("_EXPORTS = {") : source.index("\n}", source.index("_EXPORTS = {"))]
    for line in body.splitlines()[1:]:
        line = line.strip()
        if line.startswith("#"):
            found.append((line.lstrip("# ").strip(), []))
        elif line.startswith('"') and found:
            found[-1][1].append(line.split('"')[1])
    return found


def api_page(exports: dict[str, tuple[str, str]], source: str) -> str:
    """The API reference page: each public name, in the groups of ``_EXPORTS``, from its docstring."""
    lines = [
        "# API reference",
        "",
        "Every public name of `calibrate`, in the order of the flow, from its docstring (the page is written",
        "by `scripts/write_api_stub.py` from `_EXPORTS` in `calibrate/__init__.py`). Each is imported as",
        "`calibrate.NAME`; the heading names the module it lives in.",
    ]
    for comment, names in groups(source):
        lines += ["", f"## {comment[:1].upper()}{comment[1:]}"]
        for name in names:
            module, attribute = exports[name]
            lines += ["", f"::: {module}.{attribute}"]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the stub on disk is out of date")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from calibrate import _EXPORTS

    wanted = {STUB: stub_text(_EXPORTS), API_PAGE: api_page(_EXPORTS, INIT.read_text())}
    if args.check:
        stale = [path for path, text in wanted.items() if not path.is_file() or path.read_text() != text]
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run python scripts/write_api_stub.py", file=sys.stderr)
        return 1 if stale else 0
    for path, text in wanted.items():
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)} ({len(_EXPORTS)} names)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
