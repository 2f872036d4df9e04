"""Benchmark: the time and size of installing calibrate and each of its extras, with and without
constraints/tested.txt, each in a fresh virtual environment, as a user would (pip's cache off).

    python bench/bench_install.py [--extras core,deepeval,ragas,judges,labelstudio,local-embeddings]
                                  [--modes plain,constrained] [--keep-config] [--torch-from DIR] [--json OUT]
    python bench/bench_install.py --check      # resolve every extra with the constraints, install nothing

Each install copies the working tree (the files git tracks) to a temporary folder, makes a virtual
environment with ``python3 -m venv`` (the pip it brings), and times ``pip install --no-cache-dir
[-c constraints/tested.txt] 'SRC[EXTRA]'``. The size is the environment's on disk (``du``) less an
empty one's. pip reads no configuration file and none of the ``PIP_*`` variables of this machine
(its local wheel folders and indexes would make downloads look faster than a user's), except the
certificate bundle; ``--keep-config`` keeps them.

``local-embeddings`` needs torch, which the README says to install first as a CPU build: its run
installs ``torch==2.13.0`` with ``--find-links`` ``--torch-from`` (a folder with the CPU wheel, default
/opt/wheels; its dependencies from the registry) first, timed and sized apart.

``--check`` runs ``pip install --dry-run --report`` of every extra with the constraints and checks
that every package pip chose is pinned, at its pin: pip then had one candidate per package and
nothing to backtrack over. It also counts pip's "looking at multiple versions" lines (backtracking).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints" / "tested.txt"
EXTRAS = ("core", "deepeval", "ragas", "judges", "labelstudio", "local-embeddings")
BACKTRACK = re.compile(r"pip is looking at multiple versions of ([\w.-]+)")


def pins(path: Path = CONSTRAINTS) -> dict[str, str]:
    """Canonical name -> pinned version of a constraints file."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            out[re.sub(r"[-_.]+", "-", name).lower()] = version
    return out


def user_env(keep_config: bool) -> dict[str, str]:
    """The environment pip runs in: this machine's pip configuration left out unless ``keep_config``."""
    env = dict(os.environ)
    if not keep_config:
        for key in list(env):
            if key.startswith("PIP_") and key != "PIP_CERT":
                del env[key]
        env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def source_copy(into: Path) -> Path:
    """The files git tracks (symlinks kept), with their working-tree contents, copied to ``into``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    names = [n for n in listed.decode().split("\0") if n and ((ROOT / n).exists() or (ROOT / n).is_symlink())]
    into.mkdir(parents=True)
    for name in names:
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / name).is_symlink():
            target.symlink_to(os.readlink(ROOT / name))
        elif (ROOT / name).is_file():
            shutil.copy2(ROOT / name, target)
    return into


def du_mb(path: Path) -> float:
    out = subprocess.run(["du", "-sk", str(path)], check=True, capture_output=True, text=True).stdout
    return int(out.split()[0]) / 1024


def pip(venv: Path, args: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    """Run pip in ``venv``: (wall seconds, the process); its CPU seconds are added to ``CPU["s"]``."""
    start, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", *args], env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU["s"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return time.perf_counter() - start, done


CPU = {"s": 0.0}  # the CPU seconds of the last pip run (user + system, its children included)


def requirement(src: Path, extra: str) -> str:
    return str(src) if extra == "core" else f"{src}[{extra}]"


def install(
    src: Path, work: Path, extra: str, constrained: bool, env: dict[str, str], torch_from: Path, empty_mb: float
) -> dict:
    venv = work / f"venv-{extra}-{'c' if constrained else 'p'}"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    row: dict = {"extra": extra, "constraints": constrained}
    common = ["install", "--no-cache-dir", "-v"] + (["-c", str(CONSTRAINTS)] if constrained else [])
    if extra == "local-embeddings":
        seconds, done = pip(
            venv,
            ["install", "--no-cache-dir", "--find-links", str(torch_from), "torch==2.13.0"]
            + (["-c", str(CONSTRAINTS)] if constrained else []),
            env,
        )
        if done.returncode:
            raise SystemExit(f"torch from {torch_from}: {done.stderr[-2000:]}")
        row["torch_s"], row["torch_mb"] = round(seconds, 1), round(du_mb(venv) - empty_mb)
    load = os.getloadavg()[0]
    seconds, done = pip(venv, common + [requirement(src, extra)], env)
    row["ok"] = done.returncode == 0
    row["seconds"] = round(seconds, 1)
    row["cpu_s"] = round(CPU["s"], 1)
    row["load_before"] = round(load, 1)
    row["load_after"] = round(os.getloadavg()[0], 1)
    row["mb"] = round(du_mb(venv) - empty_mb - row.get("torch_mb", 0))
    row["backtracked_over"] = sorted(set(BACKTRACK.findall(done.stdout + done.stderr)))
    freeze = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"], env=env, capture_output=True, text=True
    ).stdout
    row["packages"] = len(json.loads(freeze or "[]"))
    if not row["ok"]:
        row["error"] = done.stderr[-3000:]
    shutil.rmtree(venv)
    return row


def check(src: Path, work: Path, extras: list[str], env: dict[str, str]) -> int:
    """Resolve each extra with the constraints (``--dry-run --report``): every package chosen is pinned."""
    venv = work / "venv-check"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pinned, failures = pins(), 0
    for extra in extras:
        report = work / f"report-{extra}.json"
        args = ["install", "--dry-run", "--ignore-installed", "-v", "--report", str(report), "-c", str(CONSTRAINTS)]
        if extra == "local-embeddings":  # torch's CPU build comes first (README); here only its pin is resolved
            args += ["--find-links", "/opt/wheels"] if Path("/opt/wheels").is_dir() else []
        seconds, done = pip(venv, args + [requirement(src, extra)], env)
        if done.returncode:
            print(f"{extra}: pip failed after {seconds:.1f} s:\n{done.stderr[-3000:]}")
            failures += 1
            continue
        chosen = {
            re.sub(r"[-_.]+", "-", i["metadata"]["name"]).lower(): i["metadata"]["version"]
            for i in json.loads(report.read_text())["install"]
        }
        chosen.pop("calibrate-judges", None)
        unpinned = sorted(n for n in chosen if n not in pinned)
        off = sorted(
            f"{n} {v} (pinned {pinned[n]})" for n, v in chosen.items() if n in pinned and v.split("+")[0] != pinned[n]
        )
        backtracked = sorted(set(BACKTRACK.findall(done.stdout + done.stderr)))
        bad = unpinned or off or backtracked
        failures += bool(bad)
        print(
            f"{extra}: {len(chosen)} packages resolved in {seconds:.1f} s"
            + (f"; NOT PINNED: {unpinned}" if unpinned else "")
            + (f"; OFF THE PIN: {off}" if off else "")
            + (f"; BACKTRACKED over {backtracked}" if backtracked else "")
            + ("" if bad else "; all pinned")
        )
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default=",".join(EXTRAS))
    parser.add_argument("--modes", default="plain,constrained")
    parser.add_argument("--keep-config", action="store_true", help="use this machine's pip configuration")
    parser.add_argument("--torch-from", type=Path, default=Path("/opt/wheels"))
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    extras = [e for e in args.extras.split(",") if e]
    env = user_env(args.keep_config)
    with tempfile.TemporaryDirectory(prefix="bench-install-") as tmp:
        work = Path(tmp)
        src = source_copy(work / "src")
        if args.check:
            raise SystemExit(1 if check(src, work, extras, env) else 0)
        empty = work / "venv-empty"
        subprocess.run([sys.executable, "-m", "venv", str(empty)], check=True)
        empty_mb = du_mb(empty)
        print(
            f"pip: {pip(empty, ['--version'], env)[1].stdout.strip()}; empty environment {empty_mb:.0f} MB; "
            f"machine configuration {'kept' if args.keep_config else 'left out'}; cache off",
            flush=True,
        )
        rows = []
        for extra in extras:
            for mode in args.modes.split(","):
                row = install(src, work, extra, mode == "constrained", env, args.torch_from, empty_mb)
                rows.append(row)
                print(json.dumps({k: v for k, v in row.items() if k != "error"}), flush=True)
                if not row["ok"]:
                    print(row["error"], flush=True)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
