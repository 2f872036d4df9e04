"""The judge the pipeline uses must agree with the human labels: calibrate's CI gate as a test.

Copy to tests/ of your repository (docs/ci/judge-gate.yml runs it); eval/campaign is the campaign
folder, relative to where pytest runs.
"""

from calibrate.testing import assert_gate_passes


def test_the_faithfulness_judge_is_trusted():
    assert_gate_passes(
        "eval/campaign",
        judge="faithfulness-gpt4o",
        min_labels=100,
        min_kappa=0.5,
        max_false_pass=0.2,
        forbid_self_eval=True,
    )
