"""numba's threading layer, chosen before numba loads (calibrate/stats/threads.py)."""

import threading

import pytest

from calibrate.stats import threads
from calibrate.stats.threads import KNOWN_LAYERS, LAYER, choose_layer, launching, layer_problem


def test_no_layer_named_gives_workqueue_and_leaves_openmp_alone():
    env: dict[str, str] = {"NUMBA_THREADING_LAYER": "  "}
    assert choose_layer(env) == LAYER == "workqueue"
    assert env == {"NUMBA_THREADING_LAYER": "workqueue"}


@pytest.mark.parametrize(
    ("env", "policy"),
    [
        ({"NUMBA_THREADING_LAYER": "omp"}, "PASSIVE"),
        ({"NUMBA_THREADING_LAYER": "tbb", "OMP_WAIT_POLICY": "active"}, "active"),
        ({"NUMBA_THREADING_LAYER": "omp", "GOMP_SPINCOUNT": "0"}, None),
        ({"NUMBA_THREADING_LAYER": "WorkQueue"}, None),
    ],
)
def test_the_users_layer_stands_and_openmp_waits_passively_unless_told(env, policy):
    named = env["NUMBA_THREADING_LAYER"]
    assert choose_layer(env) == named and env["NUMBA_THREADING_LAYER"] == named
    assert env.get("OMP_WAIT_POLICY") == policy


def test_an_unknown_layer_is_named_with_the_known_ones():
    assert all(layer_problem(layer) is None for layer in KNOWN_LAYERS + ("OMP",))
    problem = layer_problem("openmp")
    assert "NUMBA_THREADING_LAYER='openmp'" in problem and "workqueue, omp, tbb" in problem


def test_launching_refuses_an_unknown_layer_where_a_kernel_starts(monkeypatch):
    monkeypatch.setattr(threads, "_PROBLEM", "the environment variable NUMBA_THREADING_LAYER='x' ...")
    with pytest.raises(ValueError, match="NUMBA_THREADING_LAYER='x'"), launching():
        pass


def test_kernels_from_two_threads_take_turns():
    inside, overlap = [], []

    def launch():
        with launching():
            inside.append(1)
            overlap.append(len(inside))
            threading.Event().wait(0.02)
            inside.pop()

    workers = [threading.Thread(target=launch) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert overlap == [1, 1, 1, 1]
    with launching(), launching():  # the same thread may launch again (a kernel calling a kernel)
        pass
