"""Environment settings (calibrate.base.settings): a value that is not a number above 0 (``abc``, ``4s``,
``nan``, ``inf``, ``1e400``, ``-5``, ``0``) is an error naming the variable, the value and what is expected,
shown by every command as a clean error (exit 2), never a traceback at import and never a silent default."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calibrate.base.documents import max_document_bytes
from calibrate.base.http import HttpPolicy
from calibrate.base.settings import SettingError, env_number
from tests.conftest import run_cli

CALIBRATE = str(Path(sys.executable).with_name("calibrate"))
BAD = ["abc", "4s", "nan", "inf", "-inf", "1e400", "-5", "0", "0.0", "1,5"]


@given(text=st.text(max_size=12))
def test_any_text_is_a_number_above_zero_or_an_error_naming_the_variable(text):
    try:
        value = env_number("CALIBRATE_X_S", 60.0, unit="seconds", meaning="to wait", environ={"CALIBRATE_X_S": text})
    except SettingError as exc:
        assert str(exc).startswith("CALIBRATE_X_S=") and "not a number of seconds above 0" in str(exc)
    else:
        assert math.isfinite(value) and value > 0


@pytest.mark.parametrize("name", ["CALIBRATE_HTTP_TIMEOUT_S", "CALIBRATE_COMMAND_TIMEOUT_S", "CALIBRATE_MAX_REPLY_MB"])
@pytest.mark.parametrize("value", BAD)
def test_http_settings_are_refused_not_replaced_by_their_default(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingError, match=f"^{name}="):
        HttpPolicy()


@pytest.mark.parametrize("value", BAD)
def test_the_document_limit_is_refused_when_a_document_is_read(monkeypatch, value):
    monkeypatch.setenv("CALIBRATE_MAX_DOCUMENT_MB", value)
    with pytest.raises(SettingError, match=r"^CALIBRATE_MAX_DOCUMENT_MB="):
        max_document_bytes()
    monkeypatch.setenv("CALIBRATE_MAX_DOCUMENT_MB", "2")
    assert max_document_bytes() == 2 * 2**20


def cli(*args, env: dict) -> subprocess.CompletedProcess:
    return run_cli(*args, env=env)


@pytest.mark.parametrize(
    "name,value,command",
    [
        ("CALIBRATE_MAX_DOCUMENT_MB", "abc", "validate"),
        ("CALIBRATE_MAX_DOCUMENT_MB", "1e400", "validate"),
        ("CALIBRATE_MAX_DOCUMENT_MB", "-5", "validate"),
        ("CALIBRATE_HTTP_TIMEOUT_S", "2s", "import"),
        ("CALIBRATE_COMMAND_TIMEOUT_S", "0", "import"),
        ("CALIBRATE_MAX_REPLY_MB", "abc", "import"),
    ],
)
def test_every_command_reports_a_bad_setting_as_a_clean_error(tmp_path, name, value, command):
    folder = tmp_path / "c"
    assert cli("init", folder, "--metric", "correctness", env={}).returncode == 0
    args = (
        ["validate", folder]
        if command == "validate"
        else ["import", "mlflow", folder, "--tracking-uri", "http://127.0.0.1:9", "--experiment", "rag"]
    )
    result = cli(*args, env={name: value})
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"{name}={value!r}" in result.stderr and "above 0" in result.stderr
