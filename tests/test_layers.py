"""The house's rules on imports, read from the source: folders import only the folders beneath them,
no private name crosses a module, no import cycle (counting those inside functions), no flat module
beside the folders."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import calibrate

PACKAGE = Path(calibrate.__file__).parent

#: what may import what: a folder imports only the folders before it in this list (and itself)
LAYERS = [
    "demo",
    "base",
    "stats",
    "campaign",
    "judges",
    "cases",
    "humans",
    "imports",
    "analysis",
    "sampling",
    "review",
    "report",
    "testing",
    "cli",
    "",
]  # "": calibrate/__init__.py and __main__.py


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module imported, names imported) of every calibrate import in a file, function bodies too."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target, [alias.name for alias in node.names]))
    return [
        (line, target, names)
        for line, target, names in found
        if target == "calibrate" or target.startswith("calibrate.")
    ]


def is_module(module: str, root: Path) -> bool:
    path = root.parent.joinpath(*module.split("."))
    return path.is_dir() or path.with_suffix(".py").exists()


def folder_of(module: str, root: Path) -> str:
    """The folder a module lies in; "" for calibrate's own __init__ and __main__."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (root / parts[1]).is_dir() else ""


def violations(root: Path) -> list[str]:
    """Every broken rule in the package at ``root``, one line each."""
    problems, edges = [], {}
    for path in sorted(root.rglob("*.py")):
        here = module_name(path, root)
        where = path.relative_to(root.parent)
        if path.parent == root and path.name not in ("__init__.py", "__main__.py"):
            problems.append(f"{where}: a flat module beside the folders")
        for line, target, names in imports_of(path, root):
            # `from calibrate.cli import analysis` imports the module calibrate.cli.analysis
            targets = sorted(
                {f"{target}.{n}" if is_module(f"{target}.{n}", root) else target for n in names} or {target}
            )
            for t in targets:
                edges.setdefault(here, set()).add(t)
                mine, theirs = folder_of(here, root), folder_of(t, root)
                if theirs not in LAYERS or mine not in LAYERS:
                    problems.append(f"{where}:{line}: {t}: a folder not in LAYERS")
                elif LAYERS.index(theirs) > LAYERS.index(mine):
                    problems.append(f"{where}:{line}: {mine or 'calibrate'} imports {t}, a layer above it")
            private = [n for n in names if n.startswith("_") and n != "__version__"]
            if private and target != here:
                problems.append(f"{where}:{line}: private name(s) {', '.join(private)} of {target}")
    problems += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(edges)]
    return problems


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt == node:
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component) + [sorted(component)[0]])

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_the_package_keeps_the_rules_on_imports():
    assert violations(PACKAGE) == []


def test_every_folder_has_a_docstring_that_says_its_job():
    for init in PACKAGE.glob("*/__init__.py"):
        tree = ast.parse(init.read_text())
        assert ast.get_docstring(tree), f"{init.relative_to(PACKAGE.parent)} has no docstring"


def test_a_planted_upward_import_a_private_name_and_a_cycle_are_found(tmp_path):
    copy = tmp_path / "calibrate"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "data", "annotations"))
    (copy / "stats" / "planted.py").write_text("from calibrate.campaign import Campaign\n")
    (copy / "analysis" / "planted.py").write_text("def f():\n    from calibrate.analysis.agreement import _x\n")
    (copy / "review" / "one.py").write_text("def f():\n    import calibrate.review.two\n")
    (copy / "review" / "two.py").write_text("import calibrate.review.one\n")
    (copy / "flat.py").write_text("")
    found = violations(copy)
    assert "calibrate/stats/planted.py:1: stats imports calibrate.campaign, a layer above it" in found
    assert "calibrate/analysis/planted.py:2: private name(s) _x of calibrate.analysis.agreement" in found
    assert "import cycle: calibrate.review.one -> calibrate.review.two -> calibrate.review.one" in found
    assert "calibrate/flat.py: a flat module beside the folders" in found
    assert len(found) == 4
