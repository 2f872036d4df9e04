"""Plots for the report, drawn with matplotlib and returned as PNG data URIs."""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["report_plots", "curve_plot", "agreement_plot", "reliability_plot"]

FALSE_PASS_COLOUR, FALSE_FAIL_COLOUR = "#c0392b", "#2471a3"


def _data_uri(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def curve_plot(judge: dict, recommendation: dict | None) -> str:
    """False-pass and false-fail rate over the threshold, with Wilson bands, the recommended
    threshold and DeepEval's 0.5 marked."""
    curve = judge["curve"]
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    x = [p["threshold"] for p in curve]
    for key, colour, label in (("false_pass", FALSE_PASS_COLOUR, "false-pass rate"),
                               ("false_fail", FALSE_FAIL_COLOUR, "false-fail rate")):
        y = [p[f"{key}_rate"] if p[f"{key}_rate"] is not None else float("nan") for p in curve]
        low = [p[f"{key}_rate_ci"][0] if p[f"{key}_rate_ci"][0] is not None else float("nan") for p in curve]
        high = [p[f"{key}_rate_ci"][1] if p[f"{key}_rate_ci"][1] is not None else float("nan") for p in curve]
        ax.step(x, y, where="pre", color=colour, label=label, marker="o" if len(x) <= 30 else None, ms=3)
        ax.fill_between(x, low, high, step="pre", color=colour, alpha=0.18, linewidth=0)
    if recommendation and recommendation.get("threshold") is not None:
        ax.axvline(recommendation["threshold"], color="black", lw=1.4,
                   label=f"recommended {recommendation['threshold']:g}")
    ax.axvline(0.5, color="grey", lw=1, ls="--", label="DeepEval default 0.5")
    ax.set_xlabel("threshold (" + judge["pass_rule"] + ")")
    ax.set_ylabel("rate")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center right")
    ax.set_title(f"{judge['judge']}: error rates by threshold (95% Wilson bands)", fontsize=10)
    return _data_uri(fig)


def agreement_plot(metric: dict) -> str:
    """Each judge's Spearman rho and kappa (or pass/fail kappa) with their intervals."""
    judges = metric["judges"]
    fig, ax = plt.subplots(figsize=(6.4, 0.45 * len(judges) + 1.2))
    for offset, key, colour in ((-0.15, "spearman", "#1e8449"), (0.15, "kappa", "#7d3c98"),
                                (0.15, "pass_kappa", "#ca6f1e")):
        ys, xs, lows, highs = [], [], [], []
        for i, judge in enumerate(judges):
            stat = judge.get(key) or {}
            if key == "pass_kappa" and (judge.get("kappa") or {}).get("estimate") is not None:
                continue
            if stat.get("estimate") is None:
                continue
            ys.append(i + offset)
            xs.append(stat["estimate"])
            lows.append(stat["ci_low"] if stat.get("ci_low") is not None else stat["estimate"])
            highs.append(stat["ci_high"] if stat.get("ci_high") is not None else stat["estimate"])
        if xs:  # the interval as computed (a bootstrap interval of a few cases may leave out the estimate)
            ax.hlines(ys, lows, highs, color=colour, lw=1.2)
            ax.plot(xs, ys, "o", color=colour, ms=4, label=key)
    ax.set_yticks(range(len(judges)), [j["judge"] for j in judges], fontsize=8)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_xlim(-0.2, 1.0)
    ax.invert_yaxis()
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"{metric['metric']}: agreement with humans (95% intervals)", fontsize=10)
    return _data_uri(fig)


def reliability_plot(metric: str, fits: list[dict]) -> str:
    """Reliability diagram: per judge, the observed human pass rate against the cross-validated
    calibrated probability, bin by bin, beside the diagonal of perfect calibration."""
    fig, ax = plt.subplots(figsize=(4.8, 4.2))
    ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--", label="perfect calibration")
    for fit in fits:
        bins = fit["cross_validated"]["reliability"]
        ax.plot([b["mean_predicted"] for b in bins], [b["observed"] for b in bins], marker="o", ms=3, lw=1.2,
                label=f"{fit['judge']} (ECE {fit['cross_validated']['ece']:.3f})")
    ax.set_xlabel("calibrated probability of a human pass (cross-validated)")
    ax.set_ylabel("observed human pass rate")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    ax.set_title(f"{metric}: reliability of the calibrated scores", fontsize=10)
    return _data_uri(fig)


def report_plots(stats: dict, recommendations: list[dict], calibrations: list[dict] | None = None) -> dict:
    """``{(metric, judge): uri, (metric, None): uri, (metric, "reliability"): uri}`` for every curve,
    every agreement plot and every metric's reliability diagram."""
    recs = {(r["metric"], r["judge"]): r for r in recommendations}
    plots: dict = {}
    by_metric: dict[str, list[dict]] = {}
    for fit in calibrations or []:
        by_metric.setdefault(fit["metric"], []).append(fit)
    for metric, fits in by_metric.items():
        plots[(metric, "reliability")] = reliability_plot(metric, fits)
    for metric in stats["metrics"]:
        if metric["judges"]:
            plots[(metric["metric"], None)] = agreement_plot(metric)
        for judge in metric["judges"]:
            if judge.get("curve"):
                plots[(metric["metric"], judge["judge"])] = curve_plot(judge, recs.get((metric["metric"], judge["judge"])))
    return plots
