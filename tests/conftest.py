"""Shared fixtures: small campaigns written to temporary folders, and the browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

# no telemetry, no .env reading, before anything imports DeepEval or RAGAS
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")
os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
from pathlib import Path

import pandas as pd
import pytest

IN_CI = os.environ.get("CI") == "true"


#: the fixtures that start a real server or browser (in its own virtual environment): a test that uses one
#: is marked ``server``, which `make check`'s quick loop leaves out (`make test` and CI run them all)
SERVER_FIXTURES = {"label_studio", "mlflow_server", "phoenix_server", "local_qwen", "local_smollm", "chromedriver"}


#: `make check` sets it: every property test tries at most this many examples (CI and `make test` try each
#: test's own number)
QUICK_EXAMPLES = int(os.environ.get("CALIBRATE_QUICK_EXAMPLES") or 0)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.server)
        test = getattr(item, "obj", None)
        own = getattr(test, "_hypothesis_internal_use_settings", None)  # what @settings gave the test
        if QUICK_EXAMPLES and own is not None and own.max_examples > QUICK_EXAMPLES:
            from hypothesis import settings

            test._hypothesis_internal_use_settings = settings(own, max_examples=QUICK_EXAMPLES)


@pytest.fixture(autouse=True)
def forget_credentials_after_each_test():
    """What a test makes calibrate remember as a credential (a judge's key, a header's value, hypothesis's
    made-up keys) is forgotten after it: remembered, a key such as ``expected`` would be redacted as a word
    from every later test's text (it was, from a G-Eval step and a collect error)."""
    from calibrate.base.secrets import remembered_scope

    with remembered_scope():
        yield


def need(condition: bool, what: str) -> None:
    """Skip a test whose part is missing, except under CI=true, where a missing part fails it."""
    if not condition:
        if IN_CI:
            pytest.fail(f"{what} is missing (CI=true: tests needing it fail rather than skip)")
        pytest.skip(f"{what} is missing")


def run_cli(
    *args: object, check: bool = False, env: dict[str, str | None] | None = None
) -> subprocess.CompletedProcess:
    """``calibrate ARGS`` run in this process by click's test runner: its exit code, stdout and stderr, as a
    subprocess gives them. The same command and outputs without a new interpreter importing calibrate's
    dependencies (numba, scipy, DeepEval, RAGAS: 1 to 5 s of CPU a command, which made the slowest tests of
    `make check`); keep a subprocess where the process itself is tested (killed, run twice at once, the
    installed entry point, a Python without some package). ``env``: environment variables set for the
    command only (``None`` unsets one), as a subprocess's ``env={**os.environ, ...}``."""
    from click.testing import CliRunner

    from calibrate.cli import main

    done = CliRunner().invoke(main, [str(a) for a in args], env=env)
    if done.exception is not None and not isinstance(done.exception, SystemExit):
        raise done.exception
    if check:  # as subprocess.run(check=True)
        assert done.exit_code == 0, (args, done.exit_code, done.stderr)
    return subprocess.CompletedProcess([str(a) for a in args], done.exit_code, done.stdout, done.stderr)


#: what a message shows when Python's own error leaked through instead of calibrate's
PYTHON_ERROR = re.compile(r"\b(KeyError|TypeError|AttributeError|IndexError|RecursionError|Traceback)\b")


def assert_clear_error(exc: BaseException, *mentions: str) -> None:
    """``exc`` is an error a user can act on: a message that is not Python's own error and that names at
    least one of ``mentions`` (the parameter, field, file or name that was wrong)."""
    text = str(exc)
    assert text.strip(), f"{type(exc).__name__} with no message"
    assert not PYTHON_ERROR.search(text), text
    assert any(m and m in text for m in mentions), f"names none of {mentions}: {text}"


def write_campaign(
    folder: Path,
    toml: str,
    ratings: pd.DataFrame | str,
    cases: list[dict] | None = None,
    ratings_name: str = "ratings.csv",
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "campaign.toml").write_text(toml)
    if isinstance(ratings, str):
        (folder / ratings_name).write_text(ratings)
    elif ratings_name.endswith(".csv"):
        ratings.to_csv(folder / ratings_name, index=False)
    elif ratings_name.endswith(".parquet"):
        ratings.to_parquet(folder / ratings_name, index=False)
    else:
        with (folder / ratings_name).open("w") as handle:
            for row in ratings.to_dict("records"):
                handle.write(json.dumps(row) + "\n")
    if cases is not None:
        with (folder / "cases.jsonl").open("w") as handle:
            for case in cases:
                handle.write(json.dumps(case) + "\n")
    return folder


BINARY_TOML = """
name = "small"
[metrics.faithfulness]
scale = "binary"
max_false_pass = 0.2
[raters.judge-a]
family = "gpt"
model = "gpt-4o"
[raters.judge-b]
family = "llama"
"""


@pytest.fixture
def small_campaign(tmp_path) -> Path:
    """60 cases, binary human labels from two annotators on some cases, two judges with 0-1 scores."""
    import numpy as np

    rng = np.random.default_rng(7)
    n = 60
    truth = rng.random(n) < 0.5
    rows = []
    cases = []
    for i in range(n):
        case_id = f"c{i:03d}"
        cases.append(
            {
                "case_id": case_id,
                "input": f"question {i}",
                "actual_output": f"answer {i}",
                "metadata": {"question_type": "how" if i % 3 else "what", "generator_family": "gpt"},
            }
        )
        rows.append((case_id, "faithfulness", "ann1", "human", int(truth[i]), ""))
        if i % 5 == 0:
            rows.append((case_id, "faithfulness", "ann2", "human", int(truth[i]), ""))
        score_a = float(np.clip(truth[i] * 0.5 + rng.normal(0.3, 0.2), 0, 1).round(2))
        score_b = float(np.clip(rng.random(), 0, 1).round(2))
        rows.append((case_id, "faithfulness", "judge-a", "judge", score_a, ""))
        rows.append(
            (
                case_id,
                "faithfulness",
                "judge-b",
                "judge",
                "" if i == 3 else score_b,
                "timeout after 30 s" if i == 3 else "",
            )
        )
    frame = pd.DataFrame(rows, columns=["case_id", "metric", "rater", "rater_kind", "value", "error"])
    return write_campaign(tmp_path / "small", BINARY_TOML, frame, cases)


@pytest.fixture
def server():
    """The scripted judge server (tests/servers/judge_server.py) on 127.0.0.1, for one test."""
    from tests.servers.judge_server import JudgeServer

    with JudgeServer() as s:
        yield s


def serve(server_class, executable: Path, what: str, script: str, folder: Path):
    """Start a real server of the tests (its executable installed by ``scripts/SCRIPT``) for the session:
    missing, it skips (fails under CI=true); failing to start, it fails."""
    need(executable.exists(), f"{what} ({executable}; run scripts/{script})")
    try:
        with server_class(folder) as server:
            yield server
    except RuntimeError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def label_studio(tmp_path_factory):
    """A real Label Studio server (tests/servers/labelstudio_server.py), started once per test session;
    yields the server (``.url``, ``.token``, ``.set_password``)."""
    from tests.servers.labelstudio_server import LABEL_STUDIO, LabelStudioServer

    yield from serve(
        LabelStudioServer,
        LABEL_STUDIO,
        "Label Studio",
        "install-label-studio.sh",
        tmp_path_factory.mktemp("label-studio"),
    )


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    """A real MLflow tracking server (tests/servers/mlflow_server.py) with a SQLite backend, started once per test
    session; yields the server (``.url``, ``.client(script)``)."""
    from tests.servers.mlflow_server import MLFLOW, MlflowServer

    yield from serve(MlflowServer, MLFLOW, "MLflow", "install-mlflow.sh", tmp_path_factory.mktemp("mlflow"))


@pytest.fixture(scope="session")
def phoenix_server(tmp_path_factory):
    """A real Phoenix server (tests/servers/phoenix_server.py) with a SQLite working directory, started once per
    test session; yields the server (``.url``, ``.client(script)``)."""
    from tests.servers.phoenix_server import PHOENIX, PhoenixServer

    yield from serve(PhoenixServer, PHOENIX, "Phoenix", "install-phoenix.sh", tmp_path_factory.mktemp("phoenix"))


def local_model(tmp_path_factory, model_file: str, alias: str):
    """A real judge model (tests/servers/local_model_server.py) served by xllamacpp on 127.0.0.1 for the session."""
    from functools import partial

    from tests.servers import local_model_server as local

    model = getattr(local, model_file)
    need(model.is_file(), f"the local judge model {model.name} ({model}; run scripts/install-local-model.sh)")
    yield from serve(
        partial(local.LocalModelServer, model=model, alias=alias),
        local.PYTHON,
        "xllamacpp (the local model runtime)",
        "install-local-model.sh",
        tmp_path_factory.mktemp(f"local-model-{alias}"),
    )


@pytest.fixture(scope="session")
def local_qwen(tmp_path_factory):
    """Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) on a local llama.cpp server, started once per test session;
    yields the server (``.url`` ending in ``/v1``, ``.model``)."""
    yield from local_model(tmp_path_factory, "QWEN", "qwen2.5-coder-1.5b-instruct")


@pytest.fixture(scope="session")
def local_smollm(tmp_path_factory):
    """SmolLM2-135M-Instruct (Q4_1, a llama-architecture model) on a local llama.cpp server, started once
    per test session; yields the server (``.url`` ending in ``/v1``, ``.model``)."""
    yield from local_model(tmp_path_factory, "SMOLLM", "smollm2-135m-instruct")


@pytest.fixture(scope="session")
def chromedriver() -> str:
    path = shutil.which("chromedriver")
    need(path is not None and shutil.which("chromium") is not None, "headless Chromium and chromedriver")
    return path
