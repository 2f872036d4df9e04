"""constraints/tested.txt, the versions pip is held to (README, "Installing"; the Makefile installs with
it): every requirement of pyproject.toml pinned within its range, the pins consistent with each other,
and the pins exactly the environment these tests run in, so the file is what the suite tested.

Cheap: no network. ``bench/bench_install.py --check`` adds what needs the registry (pip resolves every
extra with the file, choosing only pinned versions: nothing to backtrack over; about 4 minutes).
"""

from __future__ import annotations

import importlib.metadata as md
import importlib.util
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PINS_FILE = ROOT / "constraints" / "tested.txt"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# the script that writes the file: the tests walk the requirements as it does
_spec = importlib.util.spec_from_file_location("make_constraints", ROOT / "scripts" / "make_constraints.py")
MAKE_CONSTRAINTS = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(MAKE_CONSTRAINTS)


def read_pins(text: str) -> dict[str, str]:
    """Canonical name -> version of a constraints file of ``name==version`` lines."""
    pins = {}
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        found = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][0-9A-Za-z.!+-]*)", line)
        assert found, f"{PINS_FILE.name} line {number}: {line!r} is not name==version"
        name = canonicalize_name(found.group(1))
        assert name not in pins, f"{PINS_FILE.name} line {number}: {name} pinned twice"
        pins[name] = found.group(2)
    return pins


PINS = read_pins(PINS_FILE.read_text(encoding="utf-8"))


def requirements() -> dict[str, list[Requirement]]:
    """pyproject's requirements per extra ("" for the core), markers evaluated for this Python."""
    out = {"": [Requirement(r) for r in PROJECT["dependencies"]]}
    out |= {extra: [Requirement(r) for r in reqs] for extra, reqs in PROJECT["optional-dependencies"].items()}
    return {
        extra: [r for r in reqs if r.marker is None or r.marker.evaluate({"extra": extra})]
        for extra, reqs in out.items()
    }


def satisfied(requirement: Requirement, version: str) -> bool:
    return requirement.specifier.contains(Version(version).public, prereleases=True)


def test_every_requirement_of_pyproject_is_pinned_within_its_range():
    problems = []
    for extra, reqs in requirements().items():
        for req in reqs:
            name = canonicalize_name(req.name)
            if name == canonicalize_name(PROJECT["name"]):
                continue  # judges = deepeval + ragas: the extras it names are checked themselves
            if name not in PINS:
                problems.append(f"[{extra or 'core'}] {req} is not pinned")
            elif not satisfied(req, PINS[name]):
                problems.append(f"[{extra or 'core'}] {req}: pinned {PINS[name]}, outside the range")
    assert not problems, "; ".join(problems) + " (rewrite the file: scripts/make_constraints.py)"


def test_judges_is_deepeval_and_ragas_for_compatibility():
    judges = {str(r) for r in requirements()["judges"]}
    assert judges == {f"{PROJECT['name']}[deepeval,ragas]"}
    assert {canonicalize_name(r.name) for r in requirements()["deepeval"]} == {"deepeval"}
    assert {canonicalize_name(r.name) for r in requirements()["ragas"]} >= {"ragas", "langchain-community"}


def closure(extras: set[str]) -> dict[str, set[str]]:
    """Canonical name -> the extras asked of it, for every distribution calibrate with ``extras`` needs,
    read from the installed distributions' metadata (scripts/make_constraints.py's own walk)."""
    seen, missing = MAKE_CONSTRAINTS.requirements_closure(PROJECT["name"], extras)
    assert not missing, (
        f"not installed in this environment: {sorted(set(missing))} (the tests run in the "
        "environment `make test` builds, every extra installed with constraints/tested.txt)"
    )
    seen.pop(canonicalize_name(PROJECT["name"]))
    return seen


def test_the_pins_are_the_environment_the_tests_run_in_and_agree_with_each_other():
    """Every package calibrate and its extras pull in here is pinned at the version installed (so the suite
    tested the pins), and every requirement of a pinned package is met by the pin of what it requires (so
    pip, held to the file, finds no conflict)."""
    needed = closure(set(PROJECT["optional-dependencies"]))
    installed = {name: md.version(name) for name in needed}
    off = {n: (v, PINS.get(n)) for n, v in installed.items() if PINS.get(n) != Version(v).public}
    assert not off, f"installed here, pinned otherwise (installed, pinned): {off}"
    extra_pins = set(PINS) - set(needed)
    assert not extra_pins, f"pinned but needed by no extra: {sorted(extra_pins)}"
    conflicts = []
    for name, extras in needed.items():
        for line in md.distribution(name).requires or []:
            req = Requirement(line)
            if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in ["", *extras]):
                continue
            dep = canonicalize_name(req.name)
            if dep in PINS and not satisfied(req, PINS[dep]):
                conflicts.append(f"{name}=={PINS[name]} requires {req}, pinned {PINS[dep]}")
    assert not conflicts, conflicts


def test_the_makefile_installs_with_the_pins():
    """`make demo` and `make test` (what CI and the README's Quick start run) install held to the file."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^PINS\s*:=\s*constraints/tested\.txt$", makefile, re.M)
    installs = [
        line for line in makefile.splitlines() if re.search(r"pip install\b", line) and "--upgrade pip" not in line
    ]
    assert len(installs) == 3 and all("-c $(PINS)" in line for line in installs), installs


def test_the_pins_file_is_refused_when_malformed():
    """The reader this test uses can fail: a range, a missing version, a name twice."""
    for text in ("numpy>=1.26\n", "numpy==\n", "numpy==2.2.6\nNumPy==2.2.6\n"):
        try:
            read_pins(text)
        except AssertionError:
            continue
        raise AssertionError(f"{text!r} was read")
