"""The report's plots, drawn as inline SVG: well-formed, bounded in size, the judges' names escaped
(calibrate/report/plots.py). The report that holds them: tests/report/test_report.py."""

import xml.etree.ElementTree as ET

from calibrate import ReportDocuments, Rule, compute_stats, load_campaign, recommend_thresholds
from calibrate.analysis.results import STATISTICS, JudgeAgreement
from calibrate.base.estimates import Estimate
from calibrate.report.plots import MAX_POINTS, agreement_svg, curve_svg, report_plots

SVG = "{http://www.w3.org/2000/svg}"


def parsed(svg) -> ET.Element:
    root = ET.fromstring(str(svg))  # well-formed XML, or this raises
    assert root.tag == SVG + "svg"
    return root


def judge_curve(n):
    step = 1 / max(n - 1, 1)
    return [
        {
            "threshold": i * step,
            "false_pass_rate": 1 - i * step,
            "false_pass_rate_ci": [max(0.0, 0.9 - i * step), min(1.0, 1.1 - i * step)],
            "false_fail_rate": i * step if i else None,  # undefined at the first threshold
            "false_fail_rate_ci": [None, None],
        }
        for i in range(n)
    ]


def judge(name, **figures):
    """A judge with the given figures, every other statistic undefined."""
    statistics = {k: figures.get(k, Estimate.undefined("not here")) for k in STATISTICS}
    head = {"rater": name, "run_id": None, "family": None, "model": None, "higher_is_better": True}
    return JudgeAgreement(judge=name, **head, n=10, n_human_pass=5, n_human_fail=5, **statistics)


def test_a_curve_draws_at_most_max_points_and_marks_the_rule_and_threshold():
    rec = {"threshold": 0.5, "rule": {"kind": "constraint", "max_false_pass": 0.1}}
    root = parsed(curve_svg(judge_curve(500), "score >= threshold", rec))
    lines = root.findall(f"{SVG}polyline")
    assert len(lines) == 2  # false pass and false fail
    for line in lines:
        assert len(line.get("points").split()) <= 2 * MAX_POINTS
    assert (
        root.find(f"{SVG}line[@class='ceiling']") is not None and root.find(f"{SVG}line[@class='chosen']") is not None
    )
    assert len(root.findall(f"{SVG}polygon")) == 1  # the false-fail rate has no band
    bare = parsed(curve_svg(judge_curve(3), "score >= threshold", None))
    assert bare.find(f"{SVG}line[@class='ceiling']") is None and bare.find(f"{SVG}line[@class='chosen']") is None


def test_a_judges_name_is_text_not_markup():
    judges = [judge('<script>alert(1)</script>&"', spearman=Estimate.interval(0.5, 0.3, 0.7, "BCa"))]
    svg = str(agreement_svg(judges))
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert parsed(svg).find(f".//{SVG}circle") is not None


def test_every_plot_of_a_report(small_campaign):
    c = load_campaign(small_campaign)
    stats = compute_stats(c, n_boot=50)
    rule = Rule("constraint", max_false_pass=0.2)
    recs = recommend_thresholds(c, metric="faithfulness", rule=rule, n_boot=0)["recommendations"]
    plots = report_plots(ReportDocuments(stats, recs))
    assert set(plots) == {("faithfulness", None), ("faithfulness", "judge-a"), ("faithfulness", "judge-b")}
    for svg in plots.values():
        parsed(svg)
        assert len(str(svg)) < 40_000
