"""Outside text is cut short only through ``calibrate.base.secrets.clip`` (redacted first, then cut), never by
slicing: a credential straddling a slice's end would keep its first characters (issue 24's second attack
found five such places). This walks the package's source for ``str(...)[:N]`` and ``x.error[:N]``-style cuts
of a hundred characters or more."""

import ast
from pathlib import Path

import calibrate

PACKAGE = Path(calibrate.__file__).parent
#: cuts of text calibrate makes itself (not a server's or another tool's): allowed
OWN_TEXT = {("report/mlflow_run.py", "MLflow's tag length"), ("review/fingerprint.py", "calibrate's own reasons")}


def raw_cuts(tree: ast.AST) -> list[int]:
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice)):
            continue
        upper, lower = node.slice.upper, node.slice.lower
        if lower is not None or not (isinstance(upper, ast.Constant) and isinstance(upper.value, int)):
            continue
        if upper.value < 100:
            continue
        value = node.value
        is_str_call = isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "str"
        is_attribute_text = isinstance(value, ast.Attribute) and value.attr in {
            "error",
            "message",
            "explanation",
            "text",
            "body",
            "detail",
            "reason",
        }
        if is_str_call or is_attribute_text:
            found.append(node.lineno)
    return sorted(found)


def test_no_outside_text_is_cut_by_slicing():
    allowed = {path for path, _ in OWN_TEXT}
    found = {}
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative == "base/secrets.py" or relative in allowed:
            continue
        lines = raw_cuts(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            found[relative] = lines
    assert not found, f"cut with a slice, not secrets.clip: {found}"


def test_the_walk_finds_a_raw_cut():
    assert raw_cuts(ast.parse("x = f'{str(exc)[:200]}'\ny = reply.error[:300]\nz = clip(exc, 200)")) == [1, 2]
