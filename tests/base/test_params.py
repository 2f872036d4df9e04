"""The public API's common parameters are checked where they enter, by one declared mechanism
(calibrate/base/params.py): every public function taking ``confidence``, ``n_boot`` or ``seed`` declares
it, and a value outside its constraint is refused naming the parameter, before any work."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest

import calibrate
from calibrate.base.errors import ParameterText
from calibrate.base.params import CHECKED

BAD = {
    "confidence": [1.5, 0, 1, -0.1, math.nan, math.inf, "0.95", True, None],
    "n_boot": [-1, 1.5, "1000", True, math.nan, None],
    "seed": [-1, 1.5, "x", True, None],
}
GOOD = {"confidence": [0.5, 0.99, np.float64(0.9)], "n_boot": [0, 200, np.int64(5)], "seed": [0, 7, np.int64(3)]}


def public_functions():
    for name in calibrate.__all__:
        found = getattr(calibrate, name)
        if callable(found) and not inspect.isclass(found):
            yield name, found


CASES = [
    (name, parameter)
    for name, function in public_functions()
    for parameter in CHECKED
    if parameter in inspect.signature(function).parameters
]


def test_the_walk_finds_the_functions_it_should():
    assert {"compute_stats", "compare_judges", "bias_probes", "run_gate", "draw_sample"} <= {n for n, _ in CASES}


@pytest.mark.parametrize("name, parameter", CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_every_public_function_declares_and_refuses(name, parameter):
    function = getattr(calibrate, name)
    assert parameter in getattr(function, "__checked__", {}), f"{name} does not declare {parameter}"
    for value in BAD[parameter]:
        with pytest.raises(ValueError) as raised:
            function(**{parameter: value})  # refused before the campaign it lacks is needed
        assert isinstance(raised.value.args[0], ParameterText), (name, parameter, value)
        assert str(raised.value).startswith(f"{parameter}="), str(raised.value)
        assert f"--{parameter.replace('_', '-')}" in raised.value.args[0].for_command_line()


def test_good_values_pass_the_check():
    from calibrate.base.params import checked

    @checked("confidence", "n_boot", "seed")
    def echo(confidence=0.95, n_boot=1000, seed=0):
        return confidence, n_boot, seed

    for parameter, values in GOOD.items():
        for value in values:
            assert echo(**{parameter: value})[list(GOOD).index(parameter)] == value


def test_a_command_line_value_is_refused_naming_its_flag(tmp_path):
    from click.testing import CliRunner

    from calibrate.cli import main

    # the command line's own types refuse first; the library's check says the same words with the flag
    result = CliRunner().invoke(main, ["compare", str(calibrate.demo_campaign_path()), "--confidence", "1.5"])
    assert result.exit_code == 2 and "--confidence" in result.output
