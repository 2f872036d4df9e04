"""The tests are laid out like the package: ``calibrate/<pkg>/<module>.py`` is tested in
``tests/<pkg>/test_<module>.py``, and a package's ``__init__.py`` that defines a function or a class in
``tests/<pkg>/test_<pkg>.py`` (an ``__init__.py`` that only re-exports or documents needs none). Other test
files may test several modules at once (a command end to end, an attack on every reader); this only asks
that each module has a file of its own to look in first, as scikit-learn keeps ``metrics/tests/test_ranking.py``
for ``metrics/_ranking.py``.

A module without one fails here unless it is listed in ``EXEMPT`` with its reason; a listed module that
is gone, or that has its test file now, fails too, so the list only shrinks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "calibrate"
TESTS = ROOT / "tests"

#: modules with no like-named test file, each with the reason it needs none
EXEMPT = {
    "calibrate/__init__.py": "the public face (lazy exports): tests/test_api.py and tests/test_api_stub.py",
    "calibrate/__main__.py": "`python -m calibrate`, two lines calling calibrate.cli.main",
    "calibrate/stats/__init__.py": "the lazy public face of calibrate.stats: tests/stats/test_common.py (its registry is __all__)",
    # the command modules: each command's options and output are tested through the command line in
    # tests/cli/test_cli.py and in the tests of the library function it calls
    "calibrate/cli/analysis.py": "commands; tests/cli/test_cli.py and tests/analysis/",
    "calibrate/cli/campaign.py": "commands; tests/cli/test_cli.py and tests/campaign/",
    "calibrate/cli/cases.py": "commands; tests/cli/test_cli.py and tests/cases/",
    "calibrate/cli/humans.py": "commands; tests/cli/test_cli.py and tests/humans/",
    "calibrate/cli/imports.py": "commands; tests/cli/test_cli.py and tests/imports/",
    "calibrate/cli/judges.py": "commands; tests/cli/test_cli.py and tests/judges/",
    "calibrate/cli/report.py": "commands; tests/cli/test_cli.py and tests/report/",
    "calibrate/cli/review.py": "commands; tests/cli/test_cli.py and tests/review/",
    "calibrate/cli/sampling.py": "commands; tests/cli/test_cli.py and tests/sampling/",
    # a run logged on a real MLflow tracking server (make test): no stand-in speaks MLflow's REST API yet
    "calibrate/report/mlflow_run.py": "exported to a real MLflow server in tests/imports/test_mlflow_traces.py",
}


def defines_something(path: Path) -> bool:
    """Whether a module defines a function or a class (an ``__init__`` that does needs a test file)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) for node in tree.body)


def test_file_for(module: Path) -> Path | None:
    """The test file named for ``module``, or None for an ``__init__`` with nothing of its own."""
    parts = module.relative_to(PACKAGE).parts
    folder = TESTS.joinpath(*parts[:-1])
    if parts[-1] == "__init__.py":
        if not defines_something(module):
            return None
        if not parts[:-1]:
            return TESTS / "test_calibrate.py"
        return folder / f"test_{parts[-2]}.py"
    return folder / f"test_{module.stem}.py"


test_file_for.__test__ = False  # a helper, not a test


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def key(module: Path) -> str:
    return module.relative_to(ROOT).as_posix()


def test_every_module_has_a_test_file_named_for_it():
    missing = [
        f"{key(m)}: expected {test_file_for(m).relative_to(ROOT).as_posix()}"
        for m in modules()
        if key(m) not in EXEMPT and (t := test_file_for(m)) is not None and not t.exists()
    ]
    assert not missing, "modules with no test file of their own (write one, or exempt with a reason):\n" + "\n".join(
        missing
    )


def test_the_exemptions_are_current():
    """An exemption for a module that is gone, or that now has its test file, is dropped from the list."""
    present = {key(m): m for m in modules()}
    stale = [name for name in EXEMPT if name not in present]
    tested = [name for name in EXEMPT if name in present and (t := test_file_for(present[name])) and t.exists()]
    assert not stale, f"exempted modules that no longer exist: {stale}"
    assert not tested, f"exempted modules that have a test file now (drop them from EXEMPT): {tested}"
    assert all(reason.strip() for reason in EXEMPT.values())


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("calibrate/stats/paired.py", "tests/stats/test_paired.py"),
        ("calibrate/humans/labelstudio/client.py", "tests/humans/labelstudio/test_client.py"),
        ("calibrate/report/__init__.py", "tests/report/test_report.py"),
        ("calibrate/stats/__init__.py", "tests/stats/test_stats.py"),
        ("calibrate/analysis/__init__.py", None),
    ],
)
def test_the_name_a_module_is_looked_for_under(module, expected):
    got = test_file_for(ROOT / module)
    assert (got.relative_to(ROOT).as_posix() if got else None) == expected
