"""The rank-sum kernel's granularity and its parallel layer: many tables in one launch give exactly what
each gives alone, the calling thread alone gives exactly what the workers give, calibrate asks numba
for a layer whose threads sleep (and keeps a user's choice), and kernels launched from several Python
threads take turns instead of aborting the process."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.stats import kernel
from calibrate.stats.bootstrap import case_counts
from calibrate.stats.paired import PairedScores, summarize_together


@st.composite
def tables(draw):
    """A few (human, judge) tables on one universe of cases, on a scale or with continuous scores,
    weighted or not, each reading its own subset of the universe."""
    n_universe = draw(st.integers(2, 60))
    seed = draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    found = []
    for k in range(draw(st.integers(1, 5))):
        positions = np.sort(rng.choice(n_universe, size=int(rng.integers(2, n_universe + 1)), replace=False))
        human = rng.integers(0, int(rng.integers(2, 25)), positions.size).astype(float)  # past SMALL_LEVELS too
        judge = rng.integers(0, 4, positions.size).astype(float) if k % 2 else np.round(rng.random(positions.size), 2)
        weights = rng.choice([0.5, 1.0, 3.0], positions.size) if draw(st.booleans()) else None
        found.append((PairedScores(human, judge, human_pass=1, levels=list(range(25)), weights=weights), positions))
    indices = rng.integers(0, n_universe, size=(draw(st.integers(1, 40)), n_universe))
    return found, case_counts(indices, n_universe)


def assert_same(a, b):
    for field in ("n", "by_human", "cum_passes", "cum_fails", "sums"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field


@settings(max_examples=60, deadline=None)
@given(tables())
def test_many_tables_in_one_launch_equal_each_alone(data):
    pairs, counts = data
    together = summarize_together([p for p, _ in pairs], counts, [pos for _, pos in pairs], tables=[True] * len(pairs))
    for (p, positions), summary in zip(pairs, together):
        alone_counts = counts.astype(np.float64) if p.weights is not None else counts
        assert_same(summary, p.summarize_counts(alone_counts, positions))
        assert np.array_equal(summary.T, p.tables(alone_counts, positions))


@settings(max_examples=30, deadline=None)
@given(tables())
def test_the_calling_thread_alone_gives_what_the_workers_give(data):
    pairs, counts = data
    args = ([p for p, _ in pairs], counts, [pos for _, pos in pairs])
    original = kernel.SERIAL_WORK
    try:
        kernel.SERIAL_WORK = 0  # every launch on the workers
        parallel = summarize_together(*args, tables=[True] * len(pairs))
        kernel.SERIAL_WORK = 10**18  # every launch on the calling thread
        serial = summarize_together(*args, tables=[True] * len(pairs))
    finally:
        kernel.SERIAL_WORK = original
    for a, b in zip(parallel, serial):
        assert_same(a, b)
        assert np.array_equal(a.T, b.T)


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("NUMBA_THREADING_LAYER", "OMP_WAIT_POLICY")}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=environ | env, timeout=600
    )


LAUNCH = """
    import numpy as np, numba, os
    from calibrate.stats import kernel
    cells = np.arange(50_000)
    kernel.rank_sums(np.ones((8, cells.size)), cells, cells, cells % 3, np.arange(cells.size + 1), 3,
                     (cells % 3 == 2).astype(float))
    print(numba.threading_layer(), os.environ.get("OMP_WAIT_POLICY"))
"""


def test_calibrate_asks_for_threads_that_sleep_while_they_wait():
    result = run_python(LAUNCH)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["workqueue", "None"]


@pytest.mark.parametrize("layer", ["omp", "workqueue"])
def test_a_layer_the_user_names_stands(layer):
    result = run_python(LAUNCH, NUMBA_THREADING_LAYER=layer)
    assert result.returncode == 0, result.stderr
    # an OpenMP layer waits passively unless the user says otherwise
    assert result.stdout.split() == [layer, "PASSIVE" if layer == "omp" else "None"]
    result = run_python(LAUNCH, NUMBA_THREADING_LAYER="omp", OMP_WAIT_POLICY="active")
    assert result.stdout.split() == ["omp", "active"]


def test_a_layer_numba_does_not_know_is_named_where_a_kernel_needs_one():
    result = run_python(
        """
        from calibrate.stats import kernel   # importing is fine: calibrate --help needs no kernel
        import numpy as np
        try:
            kernel.cell_tables(np.ones((1, 2)), np.arange(2), np.arange(2))
        except ValueError as exc:
            print(exc)
    """,
        NUMBA_THREADING_LAYER="openmp",
    )
    assert result.returncode == 0, result.stderr
    assert "NUMBA_THREADING_LAYER='openmp' names no threading layer numba knows" in result.stdout


def test_numba_imported_first_still_gets_the_layer():
    result = run_python("import numba\n" + textwrap.dedent(LAUNCH))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "workqueue"


def test_kernels_from_several_threads_take_turns():
    """numba's workqueue layer aborts the process when two threads launch kernels at once; calibrate's
    kernels hold a lock while they run."""
    result = run_python("""
        import threading
        import numpy as np
        from calibrate.stats import kernel
        from calibrate.stats.bootstrap import case_counts
        cells = np.arange(100_000)
        def work():
            for _ in range(30):
                kernel.rank_sums(np.ones((4, cells.size)), cells, cells, cells % 3, np.arange(cells.size + 1), 3,
                                 (cells % 3 == 2).astype(float))
                kernel.cell_tables(np.ones((4, cells.size), dtype=np.float32), cells, cells)
                case_counts(np.zeros((4, cells.size), dtype=np.int32), cells.size)
        threads = [threading.Thread(target=work) for _ in range(4)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        print("done")
    """)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "done"
