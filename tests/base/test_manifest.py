"""The evaluator manifest: what a result depends on (calibrate/base/manifest.py)."""

import datetime as dt
import platform
from importlib import metadata
from types import SimpleNamespace

from calibrate.base.manifest import MANIFEST_VERSION, build_manifest, package_version


def test_the_manifest_records_the_campaign_the_options_and_the_versions():
    campaign = SimpleNamespace(name="bot", path="/data/bot", data_hash="sha256:ab", out_of_scale="clip")
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    m = build_manifest(campaign, seed=3, n_boot=200)
    assert m["manifest_version"] == MANIFEST_VERSION == 1
    assert (m["campaign"], m["campaign_path"], m["data_hash"], m["out_of_scale"]) == (
        "bot",
        "/data/bot",
        "sha256:ab",
        "clip",
    )
    assert (m["seed"], m["n_boot"]) == (3, 200)
    assert m["versions"]["python"] == platform.python_version()
    assert m["versions"]["numpy"] == metadata.version("numpy")
    assert set(m["versions"]) >= {"calibrate-judges", "scipy", "scikit-learn", "pandas", "krippendorff", "numba"}
    assert before <= dt.datetime.fromisoformat(m["created"]) <= dt.datetime.now(dt.UTC)
    assert (
        build_manifest(SimpleNamespace(name="x", path=None, data_hash="h", out_of_scale=None))["campaign_path"] is None
    )


def test_a_package_not_installed_has_no_version():
    assert package_version("no-such-distribution-for-calibrate") is None
    assert package_version("scipy") == metadata.version("scipy")
