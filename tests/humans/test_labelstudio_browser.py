"""An annotator's session in a real browser: sign up to Label Studio through the organization's invite
link (as the README says; a user made through the API has no password and cannot log in), open a pushed
task in the generated interface, read the instructions (HTML, not Markdown source), click the verdicts
for the answer and for each retrieved chunk, submit, pull."""

import time
from pathlib import Path

import pandas as pd

from calibrate import load_campaign
from calibrate.humans.labelstudio.client import connect, pull, push
from calibrate.humans.labelstudio.store import RATINGS_FILE, LabelStore
from tests.conftest import write_campaign

TOML = """
name = "browser"
[metrics.faithfulness]
scale = "binary"
[metrics.contextual_relevancy]
scale = "continuous"
range = [0, 1]
human_pass = 0.5
"""
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"
CASE = {
    "case_id": "paris",
    "input": "Where is Paris?",
    "actual_output": "Paris is in France.",
    "retrieval_context": ["Paris is the capital of France.", "Bananas are yellow.", "France borders Spain."],
}


def browser(chromedriver):
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
        "--window-size=1400,1800",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(chromedriver), options=options)


def wait_for(driver, xpath, count=1, timeout=60):
    from selenium.webdriver.common.by import By

    deadline = time.time() + timeout
    while time.time() < deadline:
        found = driver.find_elements(By.XPATH, xpath)
        if len(found) >= count:
            return found
        time.sleep(0.25)
    raise AssertionError(f"{xpath} did not appear: {driver.find_element(By.TAG_NAME, 'body').text[:2000]}")


def click(driver, xpath: str, index: int, attempts: int = 20) -> None:
    """Click the ``index``-th element at ``xpath``, looked up again while the page re-renders."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    for _ in range(attempts):
        try:
            driver.find_elements(By.XPATH, xpath)[index].click()
            time.sleep(0.2)
            return
        except (StaleElementReferenceException, IndexError):
            time.sleep(0.25)
    raise AssertionError(f"could not click {xpath} [{index}]")


def test_an_annotator_labels_in_the_browser_and_the_pull_finds_exactly_that(tmp_path, label_studio, chromedriver):
    from selenium.webdriver.common.by import By

    humans = pd.DataFrame(
        {"case_id": ["paris"], "metric": "faithfulness", "rater": "lead", "rater_kind": "human", "value": [1]}
    )
    folder = write_campaign(tmp_path / "campaign", TOML, humans, [CASE])
    project_id = push(load_campaign(folder), url=label_studio.url, api_key=label_studio.token)["project_id"]
    client = connect(label_studio.url, label_studio.token)
    task_id = next(iter(client.tasks.list(project=project_id))).id
    email, password = "browser-annotator@calibrate.test", "browser-annotator-password-1"
    # the README's way in: the organization's invite link (the API's GET /api/invite, or Organization >
    # Add People in the web page); the annotator signs up there with an e-mail and a password
    invite = client.organizations.invites.get_invite_link()
    assert invite.invite_url.startswith("/user/signup/?token=") and invite.token in invite.invite_url

    driver = browser(chromedriver)
    try:
        driver.get(label_studio.url + invite.invite_url)
        wait_for(driver, "//input[@name='email']")[0].send_keys(email)
        driver.find_element(By.NAME, "password").send_keys(password)
        driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait_for(driver, "//*[contains(normalize-space(), 'Projects')]")
        assert any(u.email == email for u in client.users.list())
        # and logs in again later with that password
        driver.delete_all_cookies()
        driver.get(label_studio.url + "/user/login/")
        wait_for(driver, "//input[@name='email']")[0].send_keys(email)
        driver.find_element(By.NAME, "password").send_keys(password)
        driver.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait_for(driver, "//*[contains(normalize-space(), 'Projects')]")
        driver.get(f"{label_studio.url}/projects/{project_id}/data?task={task_id}")
        # the generated interface, with one pair of choices per retrieved chunk (<Repeater>)
        relevant = wait_for(driver, "//*[normalize-space(text())='relevant']", count=3)
        not_relevant = driver.find_elements(By.XPATH, "//*[normalize-space(text())='not relevant']")
        assert len(relevant) == len(not_relevant) == 3
        assert "Bananas are yellow." in driver.find_element(By.TAG_NAME, "body").text
        # the instructions: each metric's guideline as headings, lists and bold verdicts, not Markdown source
        click(driver, "//button[normalize-space()='Instructions']", 0)
        body = wait_for(driver, "//*[contains(@class, 'modal') and .//h3]")[-1]
        headings = [h.text for h in body.find_elements(By.TAG_NAME, "h3")]
        assert headings == [
            "Contextual relevancy: is each retrieved chunk relevant to the question?",
            "Faithfulness: is every claim in the answer supported by the retrieved contexts?",
        ]
        assert {s.text for s in body.find_elements(By.TAG_NAME, "strong")} >= {"pass", "fail", "relevant"}
        assert not body.find_elements(By.TAG_NAME, "pre") and "**" not in body.text
        assert len(body.find_elements(By.TAG_NAME, "li")) >= 6
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(SCREENSHOTS / "labelstudio-instructions.png"))
        click(driver, "//button[@aria-label='Close modal']", 0)
        # the interface re-renders after a click: find each choice afresh (a stale one is looked up again)
        for text, index in (("relevant", 0), ("not relevant", 1), ("relevant", 2)):
            click(driver, f"//*[normalize-space(text())='{text}']", index)
        click(driver, "//*[normalize-space(text())='fail']", 0)
        time.sleep(0.2)
        driver.find_element(By.XPATH, "//button[normalize-space()='Submit']").click()
        deadline = time.time() + 30
        while time.time() < deadline and not client.tasks.get(task_id).annotations:
            time.sleep(0.5)
    finally:
        driver.quit()

    summary = pull(load_campaign(folder), url=label_studio.url, api_key=label_studio.token)
    assert (summary["annotations"], summary["labels"]) == (1, 2)
    ratings = pd.read_csv(folder / RATINGS_FILE)
    assert {(r.metric, r.rater, r.value) for r in ratings.itertuples()} == {
        ("faithfulness", email, 0.0),
        ("contextual_relevancy", email, 2 / 3),
    }
    store = LabelStore(folder)
    chunks = [h["details"] for h in store.history() if h["metric"] == "contextual_relevancy"]
    store.close()
    assert chunks == [{"chunks": ["relevant", "not relevant", "relevant"]}]
