"""The HTML report in a real headless Chromium: renders, shows its plots, runs no case content and
makes no network request."""

import html as html_lib
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calibrate import ReportDocuments, compute_stats, load_campaign, recommend_thresholds, write_report
from calibrate.analysis.calibration import calibration_maps
from calibrate.analysis.rules import default_rule
from calibrate.analysis.versus import judge_matrix
from calibrate.review.audit import audit_judges
from tests.conftest import BINARY_TOML, write_campaign

EVIL = (
    '<script>window.__pwned = 1; fetch("http://127.0.0.1:9/x")</script>'
    '<img src="http://127.0.0.1:9/y.png" onerror="window.__pwned = 2">'
)


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    rng = np.random.default_rng(2)
    human = (rng.random(70) < 0.4).astype(int)
    score = np.clip(0.5 * human + rng.normal(0.25, 0.2, 70), 0, 1).round(2)
    score[0], human[0] = 0.99, 0  # case 0 is the worst false pass, so its text is shown
    newer = np.clip(0.6 * human + rng.normal(0.2, 0.15, 70), 0, 1).round(2)
    frame = pd.DataFrame(
        {
            "case_id": [f"c{i}" for i in range(70)] * 3,
            "metric": "faithfulness",
            "rater": ["ann"] * 70 + ["judge-a"] * 70 + ["judge-b"] * 70,
            "rater_kind": ["human"] * 70 + ["judge"] * 140,
            "value": np.r_[human, score, newer],
        }
    )
    cases = [
        {
            "case_id": f"c{i}",
            "input": EVIL if i == 0 else f"question {i}",
            "actual_output": EVIL,
            "retrieval_context": [f"passage {i}: " + "a long retrieved passage " * 30, "short"],
            "metadata": {"question_type": "how"},
        }
        for i in range(70)
    ]
    tmp = tmp_path_factory.mktemp("report")
    campaign = load_campaign(write_campaign(tmp / "campaign", BINARY_TOML, frame, cases))
    stats = compute_stats(campaign, n_boot=200, by="question_type")
    recs = recommend_thresholds(
        campaign, metric="faithfulness", rule=default_rule(campaign.metrics["faithfulness"]), n_boot=200
    )["recommendations"]
    audit = audit_judges(campaign, metric="faithfulness", old="judge-a", new="judge-b", n_boot=200)
    documents = ReportDocuments(
        stats,
        recs,
        cases=campaign.cases,
        audits=[audit],
        calibrations=calibration_maps(campaign),
        versus=[judge_matrix(campaign, metric="faithfulness")],
    )
    write_report(documents, tmp / "out")
    return tmp / "out"


def test_case_text_is_escaped_in_the_files(report_dir):
    html = (report_dir / "report.html").read_text()
    assert "&lt;script&gt;window.__pwned" in html and "<script>window.__pwned" not in html
    assert "<script" not in html.lower()  # the report itself has no script at all
    head = html_lib.unescape(html[: html.index("</head>")])
    assert "Content-Security-Policy" in head and "default-src 'none'" in head


def _chromium(chromedriver: str):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    return webdriver.Chrome(service=Service(chromedriver), options=options)


#: where the suite leaves its screenshots of the report (git ignores the folder)
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"


def test_report_reads_at_1200_and_800_px_and_prints_whole(report_dir, chromedriver):
    from selenium.webdriver.common.by import By

    driver = _chromium(chromedriver)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        for width in (1200, 800):
            driver.set_window_size(width, 1300)
            driver.get((report_dir / "report.html").as_uri())
            time.sleep(0.3)
            # the decision comes first: the verdict block is the page's first section
            first = driver.find_element(By.CSS_SELECTOR, "h2")
            assert first.text == "Verdict" and first.location["y"] < 300
            lines = driver.find_elements(By.CSS_SELECTOR, "section.verdicts li.verdict")
            assert len(lines) == 2 + 2 and lines[0].text.startswith("judge-a: ")
            # the main column never scrolls sideways; at 1,200 px no table does either
            assert driver.execute_script(
                "return document.documentElement.scrollWidth <= document.documentElement.clientWidth"
            )
            if width == 1200:
                assert (
                    driver.execute_script(
                        "return [...document.querySelectorAll('.scroll')].filter("
                        "e => e.scrollWidth > e.clientWidth + 1).length"
                    )
                    == 0
                )
            # every plot is drawn: an inline SVG with shapes in it, laid out at a readable size
            drawn = driver.execute_script(
                "return [...document.querySelectorAll('svg')].map(e => "
                "[e.getBoundingClientRect().width, e.querySelectorAll('path, line, rect, "
                "circle, polyline').length])"
            )
            assert len(drawn) >= 4 and all(w > 100 and shapes > 0 for w, shapes in drawn), drawn
            driver.save_screenshot(str(SCREENSHOTS / f"report-top-{width}px.png"))
        # worst misses are open, with the retrieved context clipped and the whole of it one click away
        misses = driver.find_element(By.CSS_SELECTOR, "table.misses")
        assert misses.is_displayed() and "retrieved context" in misses.text
        clip = misses.find_element(By.CSS_SELECTOR, "td.retrieval_context .clip")
        full = clip.find_element(By.CSS_SELECTOR, ".full")
        assert not full.is_displayed() and clip.find_element(By.CSS_SELECTOR, ".short").text.endswith("…")
        driver.execute_script("arguments[0].scrollIntoView()", clip)
        clip.find_element(By.TAG_NAME, "label").click()
        assert full.is_displayed() and "[2] short" in full.text
        driver.save_screenshot(str(SCREENSHOTS / "report-worst-misses-800px.png"))
        # printed, nothing is folded away: the curve tables and every full text show
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
        assert all(e.is_displayed() for e in driver.find_elements(By.CSS_SELECTOR, ".fold > .folded"))
        assert all(e.is_displayed() for e in driver.find_elements(By.CSS_SELECTOR, ".clip .full"))
    finally:
        driver.quit()


def test_report_in_headless_chromium(report_dir, chromedriver):
    from selenium.webdriver.common.by import By

    driver = _chromium(chromedriver)
    try:
        driver.get((report_dir / "report.html").as_uri())
        time.sleep(0.5)
        assert driver.title.startswith("Judge calibration report")
        assert "Agreement with humans" in driver.find_element(By.TAG_NAME, "body").text
        audit = driver.find_element(By.CSS_SELECTOR, "section.audit")
        assert "Judge-upgrade audit: judge-b (new) vs judge-a (old)" in audit.text
        decision = audit.find_element(By.CSS_SELECTOR, "p.decision")
        assert decision.text.split(":")[0] in ("non-inferior", "inferior", "inconclusive") and decision.is_displayed()
        assert len(driver.find_elements(By.CSS_SELECTOR, "section.audit > table tr")) == 11  # header + 10 statistics
        calibration = driver.find_element(By.CSS_SELECTOR, "section.calibration")
        assert "Calibration: what a score of “faithfulness” means" in calibration.text
        assert len(calibration.find_elements(By.CSS_SELECTOR, "table tr")) == 3  # header + two judges
        assert (
            calibration.find_element(By.CSS_SELECTOR, "figure.plot")
            .get_attribute("aria-label")
            .startswith("reliability diagram")
        )
        versus = driver.find_element(By.CSS_SELECTOR, "section.versus")
        assert "Judge versus judge on “faithfulness”" in versus.text
        assert next(c.text for c in versus.find_elements(By.CSS_SELECTOR, "table tr:nth-child(2) td")) == "judge-a"
        # every plot is inline SVG, drawn at a readable size; the curves are small multiples, one per judge
        plots = driver.find_elements(By.TAG_NAME, "svg")
        assert len(plots) >= 4 and not driver.find_elements(By.TAG_NAME, "img")
        for plot in plots:
            assert driver.execute_script("return arguments[0].getBoundingClientRect().width > 100", plot)
        assert len(driver.find_elements(By.CSS_SELECTOR, ".panels figure.panel svg line.chosen")) >= 1
        # the case text is shown as text and ran nothing
        assert driver.execute_script("return window.__pwned") is None
        driver.find_element(By.TAG_NAME, "details").click()
        assert "window.__pwned" in driver.find_element(By.TAG_NAME, "body").get_attribute("textContent")
        # no request left the page: only the file itself and its inline data: images
        requests = []
        for entry in driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                requests.append(message["params"]["request"]["url"])
        assert requests and all(u.startswith(("file://", "data:")) for u in requests), requests
    finally:
        driver.quit()


def test_the_demo_report_fits_1200_px(tmp_path, chromedriver):
    """Nine judges, slices by question type and an audit: the widest report the suite builds."""
    from selenium.webdriver.common.by import By

    from calibrate import demo_report

    _, paths = demo_report(tmp_path / "demo", n_boot=200)
    driver = _chromium(chromedriver)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        for width in (1200, 800):
            driver.set_window_size(width, 1300)
            driver.get(paths["html"].as_uri())
            time.sleep(0.3)
            assert len(driver.find_elements(By.CSS_SELECTOR, "section.verdicts li.verdict")) == 9 + 2
            assert driver.execute_script(
                "return document.documentElement.scrollWidth <= document.documentElement.clientWidth"
            )
            if width == 1200:  # no table scrolls either, the nine judges' matrix included
                wide = driver.execute_script(
                    "return [...document.querySelectorAll('.scroll')].filter(e => "
                    "e.scrollWidth > e.clientWidth + 1).map(e => e.querySelector('tr').innerText)"
                )
                assert wide == [], wide
            driver.save_screenshot(str(SCREENSHOTS / f"demo-top-{width}px.png"))
    finally:
        driver.quit()


def test_the_stream_demo_report_says_what_happened_since_the_threshold_was_chosen(tmp_path):
    import calibrate
    from calibrate.demo import DEMO_DRIFT

    stream = calibrate.load_campaign(calibrate.demo_stream_path(), out_of_scale="drop")
    documents, paths = calibrate.build_report(stream, tmp_path / "stream", n_boot=0)
    since = documents.since
    monitored = {m["judge"]: m for m in since["monitors"]}
    assert DEMO_DRIFT[1] in monitored and monitored[DEMO_DRIFT[1]]["alarmed"]
    assert not monitored["Olz-gpt4o"]["alarmed"]
    assert len(since["monitors"]) + len(since["not_monitored"]) == 9
    assert all("no threshold" in n["reason"] for n in since["not_monitored"])
    html = paths["html"].read_text()
    assert "<h2>Since the threshold was chosen</h2>" in html
    assert html.count('<svg class="monitor"') == 3 * len(since["monitors"])  # the pass rate's two watches: one panel
    assert html.count('class="alarm"') == sum(len(r["alarms"]) for m in since["monitors"] for r in m["rates"])
    markdown = paths["md"].read_text()
    assert "## Since the threshold was chosen" in markdown and f"### relevance / {DEMO_DRIFT[1]}: alarm" in markdown
    assert json.loads(paths["json"].read_text())["since"]["monitors"][0]["rates"][0]["sequence"]
    # the embedded demo has no time: no such section
    assert calibrate.report_documents(calibrate.load_campaign(calibrate.demo_campaign_path()), n_boot=0).since is None
