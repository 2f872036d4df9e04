"""A sample of part of the cases (a queue of escalated cases, its frame recorded) weighted beside samples of
every case (calibrate/campaign/weights.py): each part of the population stands at its size."""

from types import SimpleNamespace

import numpy as np
import pytest

from calibrate.campaign.weights import OUTSIDE, design_weights

N_D, N_E = 3000, 1000  # the cases a band decides, and the ones it escalates (the queue's frame)
PASS_D, PASS_E = 0.9, 0.3
N_UNIFORM, N_QUEUE = 150, 100


def population(rng):
    ids = np.array([f"c{i:05d}" for i in range(N_D + N_E)])
    passes = np.r_[rng.random(N_D) < PASS_D, rng.random(N_E) < PASS_E].astype(float)
    return ids, passes, ids[N_D:]


def sample(cases, probability, stratum="all", **design):
    n = len(cases)
    return {
        "design": {"created": design.pop("created", "2026-01-01"), **design},
        "case_ids": list(cases),
        "strata": [stratum] * n,
        "inclusion_probability": np.full(n, probability),
    }


def draw(rng, ids, frame, *, record_frame=True):
    """A uniform sample of every case, then a queue drawn uniformly from the frame's unlabelled cases."""
    uniform = np.sort(rng.choice(ids, N_UNIFORM, replace=False))
    labelled = np.intersect1d(uniform, frame)
    pool = np.setdiff1d(frame, labelled)
    queue = np.sort(rng.choice(pool, N_QUEUE, replace=False))
    extra = {"frame": frame.tolist(), "frame_labelled": labelled.tolist()} if record_frame else {}
    samples = {
        "uniform": sample(uniform, N_UNIFORM / ids.size, strategy="random", n=N_UNIFORM),
        "queue": sample(queue, N_QUEUE / pool.size, "escalated", strategy="escalated", created="2026-02-01", **extra),
    }
    return samples, np.union1d(uniform, queue)


def weighted_pass_rate(ids, passes, samples, labelled):
    campaign = SimpleNamespace(samples=samples, cases={c: {} for c in ids})
    dw = design_weights(campaign, labelled)
    y = passes[np.searchsorted(ids, labelled)]
    return float(np.average(y, weights=dw.weights)), dw


def test_the_pass_rate_is_unbiased_with_the_frame_and_biased_without():
    """Over 300 draws of one population the mean estimate is within 4 standard errors of the mean (the
    sampling error of the mean of 300 draws, measured from the draws) of the population's pass rate; the queue
    taken as a sample of every case (no frame recorded, the old treatment) misses it by more than 20."""
    rng = np.random.default_rng(7)
    ids, passes, frame = population(rng)
    truth = passes.mean()
    framed, unframed = [], []
    for _ in range(300):
        seed = int(rng.integers(2**32))
        samples, labelled = draw(np.random.default_rng(seed), ids, frame)
        framed.append(weighted_pass_rate(ids, passes, samples, labelled)[0])
        samples, labelled = draw(np.random.default_rng(seed), ids, frame, record_frame=False)
        unframed.append(weighted_pass_rate(ids, passes, samples, labelled)[0])
    se = np.std(framed, ddof=1) / np.sqrt(len(framed))
    assert abs(np.mean(framed) - truth) < 4 * se
    assert truth - np.mean(unframed) > 20 * np.std(unframed, ddof=1) / np.sqrt(len(unframed))


def test_each_part_stands_at_its_size():
    rng = np.random.default_rng(1)
    ids, passes, frame = population(rng)
    samples, labelled = draw(rng, ids, frame)
    _, dw = weighted_pass_rate(ids, passes, samples, labelled)
    in_frame = np.isin(labelled, frame)
    uniform_in_d = np.count_nonzero(~np.isin(samples["uniform"]["case_ids"], frame))
    # the frame at its exact size, in the units of the uniform sample (each of its cases stands for N / n)
    expected = N_E * N_UNIFORM / (N_D + N_E) / uniform_in_d
    assert dw.weights[in_frame].sum() / dw.weights[~in_frame].sum() == pytest.approx(expected)
    designs = {d["sample"]: d for d in dw.designs}
    assert designs["queue"]["frame"] == "part" and designs["queue"]["frame_size"] == N_E
    assert designs["uniform"]["frame"] == "all" and "describes" not in designs["queue"]
    assert designs["queue"]["labelled"] == N_QUEUE
    assert sum(d["weight_share"] for d in dw.designs) == pytest.approx(1.0)
    # on the decided cases the uniform sample keeps its (equal) weights
    assert np.ptp(dw.weights[~in_frame]) == pytest.approx(0.0)


def test_only_a_queue_describes_its_frame_and_says_so():
    rng = np.random.default_rng(2)
    ids, passes, frame = population(rng)
    queue = np.sort(rng.choice(frame, N_QUEUE, replace=False))
    samples = {"queue": sample(queue, N_QUEUE / N_E, "escalated", strategy="escalated", frame=frame.tolist())}
    rate, dw = weighted_pass_rate(ids, passes, samples, queue)
    assert rate == pytest.approx(passes[np.searchsorted(ids, queue)].mean())
    (entry,) = dw.designs
    assert "only the cases of the partial frames" in entry["describes"] and dw.n_outside == 0


def test_labels_outside_any_sample_are_the_whole_population_design():
    rng = np.random.default_rng(4)
    ids, passes, frame = population(rng)
    before = np.sort(rng.choice(ids, 200, replace=False))  # labelled outside any sample
    labelled_in_frame = np.intersect1d(before, frame)
    pool = np.setdiff1d(frame, labelled_in_frame)
    queue = np.sort(rng.choice(pool, 50, replace=False))
    extra = {"frame": frame.tolist(), "frame_labelled": labelled_in_frame.tolist()}
    samples = {"queue": sample(queue, 50 / pool.size, "escalated", strategy="escalated", **extra)}
    _, dw = weighted_pass_rate(ids, passes, samples, np.union1d(before, queue))
    assert dw.n_outside == 200 and {d["sample"] for d in dw.designs} == {OUTSIDE, "queue"}
    in_frame = np.isin(np.union1d(before, queue), frame)
    expected = N_E * 200 / (N_D + N_E) / (200 - labelled_in_frame.size)
    assert dw.weights[in_frame].sum() / dw.weights[~in_frame].sum() == pytest.approx(expected)


def test_a_queue_without_a_recorded_frame_is_weighted_as_before():
    rng = np.random.default_rng(5)
    ids, passes, frame = population(rng)
    samples, labelled = draw(rng, ids, frame, record_frame=False)
    _, dw = weighted_pass_rate(ids, passes, samples, labelled)
    queue = {d["sample"]: d for d in dw.designs}["queue"]
    assert queue["frame"].startswith("not recorded")
    assert dw.weights is None  # two uniform designs: every case counts once, as before frames were recorded
