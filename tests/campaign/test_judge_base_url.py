"""A judge model's base_url with a user name or password in it (``http://bob:PASSWORD@host/v1``) is refused
when campaign.toml is read, as the importers refuse one, naming the field and never the password: it
would otherwise be copied into every judge run's record (judge_runs/*.json, judge_ratings.sqlite)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from calibrate import CampaignError, load_campaign
from tests.conftest import write_campaign

PASSWORD = "Zq81PLmvUrlPass42"
BASE = """
name = "j"
[metrics.faithfulness]
scale = "binary"
[judges.ja]
library = "deepeval"
metric = "faithfulness"
model = {{ provider = "openai", name = "careful", base_url = "{url}" }}
"""
HEADER = "case_id,metric,rater,rater_kind,value\na,faithfulness,ann,human,1\n"


@pytest.mark.parametrize(
    "url",
    [
        f"http://bob:{PASSWORD}@127.0.0.1:9/v1",
        f"https://:{PASSWORD}@example.com/v1",
        f"http://{PASSWORD}@127.0.0.1:9/v1",
    ],
)
def test_a_base_url_with_credentials_is_refused_without_showing_them(tmp_path, url):
    folder = write_campaign(tmp_path / "c", BASE.format(url=url), HEADER)
    with pytest.raises(CampaignError) as error:
        load_campaign(folder)
    problem = error.value.problems[0]
    assert problem.field == "judges.ja.model.base_url" and "user name or password" in problem.message
    assert PASSWORD not in str(error.value)
    result = subprocess.run(
        [str(Path(sys.executable).with_name("calibrate")), "judge", folder],
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ,
    )
    assert result.returncode == 2 and PASSWORD not in result.stdout + result.stderr
    assert not (folder / "judge_runs").exists() and not (folder / "judge_ratings.sqlite").exists()


@pytest.mark.parametrize("url", ["ftp://host/v1", "127.0.0.1:8000/v1", "http:///v1"])
def test_a_base_url_that_is_no_http_address_is_refused(tmp_path, url):
    with pytest.raises(CampaignError, match=r"judges.ja.model.base_url"):
        load_campaign(write_campaign(tmp_path / "c", BASE.format(url=url), HEADER))
