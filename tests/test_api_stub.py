"""The typed face of the lazy top-level API: calibrate/__init__.pyi says where each public name comes from,
so type checkers see real signatures rather than ``Any``; it must list exactly the names of ``_EXPORTS``."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import calibrate

ROOT = Path(__file__).resolve().parents[1]
STUB = ROOT / "calibrate" / "__init__.pyi"


def test_the_stub_is_the_one_the_exports_give():
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "write_api_stub.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def test_each_name_of_the_stub_is_the_object_calibrate_gives():
    tree = ast.parse(STUB.read_text())
    imported = {
        alias.asname: (node.module, alias.name)
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert imported == calibrate._EXPORTS
    for name, (module, attribute) in imported.items():
        assert getattr(calibrate, name) is getattr(importlib.import_module(module), attribute), name
    listed = next(node.value for node in tree.body if isinstance(node, ast.Assign) and node.targets[0].id == "__all__")
    assert ast.literal_eval(listed) == sorted(calibrate._EXPORTS) == calibrate.__all__


def test_the_version_is_the_installed_packages():
    from importlib.metadata import version

    assert calibrate.__version__ == version(calibrate.DISTRIBUTION) and "__version__" in dir(calibrate)


def test_the_package_says_it_is_typed():
    assert (ROOT / "calibrate" / "py.typed").is_file()
