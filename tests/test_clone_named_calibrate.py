"""A clone in a folder named `calibrate`, installed for development (`pip install -e`, as `make` does),
and Python started beside it: `import calibrate` gives the package, not the clone's folder as an empty
namespace package (which it did while the editable install was an import hook that runs after the
working directory's folders)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IMPORT = "import calibrate, sys; print(calibrate.__file__); print(calibrate.load_campaign.__module__)"


def editable_wheel(project: Path, out: Path) -> Path:
    """The wheel `pip install -e PROJECT` installs, built by setuptools as pip asks it to."""
    out.mkdir()
    build = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from setuptools import build_meta; print(build_meta.build_editable(sys.argv[1]))",
            str(out),
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    return out / build.stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_python_beside_a_clone_named_calibrate_imports_the_package(tmp_path):
    parent = tmp_path / "work"
    clone = parent / "calibrate"
    clone.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, clone / name)
    shutil.copytree(
        ROOT / "calibrate", clone / "calibrate", symlinks=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    wheel = editable_wheel(clone, tmp_path / "dist")
    site = tmp_path / "site-packages"  # what pip puts in site-packages: the .pth and whatever it imports
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site, [n for n in archive.namelist() if "/" not in n])
    # the environment running the tests has calibrate installed too (this checkout, as a path entry):
    # left out of the child's path, so the child sees the clone's install alone, as a user's would
    installed = str(ROOT.resolve())
    forget = f"import os, sys; sys.path = [p for p in sys.path if not p or os.path.realpath(p) != {installed!r}]; "
    for where in (parent, clone, tmp_path):  # beside the clone, inside it, elsewhere
        found = subprocess.run(
            [sys.executable, "-c", f"{forget}import site; site.addsitedir({str(site)!r}); {IMPORT}"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert found.returncode == 0, (where, found.stderr[-2000:])
        assert found.stdout.splitlines() == [str(clone / "calibrate" / "__init__.py"), "calibrate.campaign.load"]
    pth = next(site.glob("*.pth")).read_text()
    assert pth.strip() == str(clone.resolve()), f"a path entry for the clone, not an import hook: {pth!r}"
