"""Write constraints/tested.txt: the version of every package that calibrate and its extras pull in, as
installed in an environment the whole test suite passed in.

    .venv/bin/python scripts/make_constraints.py [--out constraints/tested.txt]

Run it with the Python of an environment built by ``make test`` (every extra installed), after the suite
passed there. It walks the requirements of calibrate-judges with every extra of pyproject.toml, through
each installed distribution's own metadata (markers evaluated for this Python, the extras a requirement
names followed), and pins each distribution it reaches at its installed version. With every package of
an extra pinned, pip has one candidate for each and nothing to backtrack over
(``bench/bench_install.py --check`` shows it; ``tests/test_constraints.py`` checks the file against
pyproject.toml and against itself).
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
HEADER = """\
# The versions calibrate's tests ran with: every package that calibrate-judges and its extras install
# (Linux x86-64, Python 3.11). With this file pip has one candidate per package and nothing to backtrack
# over (`pip install -c constraints/tested.txt 'calibrate-judges[judges]'`; see the README's "Installing").
# A constraints file only caps what is asked for: packages an install does not need are not installed.
# torch is pinned at the release the Makefile installs: install its CPU build first (see the README).
# Written by scripts/make_constraints.py from an environment `make test` built and the suite passed in;
# tests/test_constraints.py checks it against pyproject.toml.
"""


def requirements_closure(project: str, extras: set[str]) -> tuple[dict[str, set[str]], list[str]]:
    """Every distribution ``project[extras]`` requires, itself included, through each installed
    distribution's own metadata (markers evaluated for this Python, the extras a requirement names
    followed): canonical name -> the extras asked of it; and the names required but not installed.
    tests/test_constraints.py walks the same closure."""
    seen: dict[str, set[str]] = {}
    missing: list[str] = []

    def visit(name: str, wanted: set[str]) -> None:
        key = canonicalize_name(name)
        if key in seen and wanted <= seen[key]:
            return
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            missing.append(name)
            return
        seen.setdefault(key, set()).update(wanted)
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ["", *wanted]):
                visit(req.name, set(req.extras))

    visit(project, extras)
    return seen, missing


def closure(project: str, extras: set[str]) -> dict[str, str]:
    """Canonical name -> installed version of every distribution ``project[extras]`` requires, itself
    excluded."""
    seen, missing = requirements_closure(project, extras)
    if missing:
        raise SystemExit(
            f"not installed here, so not pinned: {', '.join(sorted(set(missing)))} "
            "(run this with the Python of an environment `make test` built)"
        )
    key = canonicalize_name(project)
    return {name: md.version(name) for name in sorted(seen) if name != key}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "constraints" / "tested.txt")
    args = parser.parse_args()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = closure(project["name"], set(project.get("optional-dependencies", {})))
    lines = [f"{name}=={version.split('+')[0]}" for name, version in pins.items()]  # torch 2.13.0+cpu: 2.13.0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(HEADER + "\n".join(lines) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(lines)} packages", file=sys.stderr)


if __name__ == "__main__":
    main()
