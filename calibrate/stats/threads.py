"""The parallel layer of the statistics kernels, chosen before numba loads.

On Linux numba's default threading layer is GNU OpenMP, whose idle threads spin (busy-wait) between
parallel regions before they sleep. A bootstrap launches many kernels, so on a machine with other work
running those spinning threads take CPU from that work and from calibrate's own main thread: measured
on the demo's ``calibrate stats --by question_type`` beside other work, 113.7 s of wall time and 37.4 s
of CPU with OpenMP as installed, 31.2 s / 7.3 s with ``OMP_WAIT_POLICY=PASSIVE``, and 25.2 s / 6.8 s
with numba's own ``workqueue`` layer, whose threads sleep on a condition while they wait.

So calibrate asks numba for the workqueue layer, unless the environment already names one
(``NUMBA_THREADING_LAYER``: the user's choice stands), and lets any OpenMP layer wait passively unless
``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` says otherwise. Both are set in the environment before numba
reads it (this module imports numba; every kernel imports numba through it), and in numba's
configuration when numba was already imported but has not started its threads yet.

The workqueue layer is not threadsafe: two Python threads launching parallel kernels at the same time
make numba abort the process. Every kernel of calibrate is therefore launched under :data:`launch_lock`
(:func:`launching`).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager

__all__ = ["KNOWN_LAYERS", "LAYER", "choose_layer", "launch_lock", "launching", "layer_problem", "numba"]

#: The threading layer calibrate asks numba for when the environment names none.
LAYER = "workqueue"
#: The values numba takes for NUMBA_THREADING_LAYER: a layer, or a property it picks one by.
KNOWN_LAYERS = ("workqueue", "omp", "tbb", "default", "safe", "threadsafe", "forksafe")

#: Held while a parallel kernel runs: kernels launched from several Python threads take turns.
launch_lock = threading.RLock()


def choose_layer(environ: MutableMapping[str, str] | None = None) -> str:
    """Choose numba's threading layer: the one the environment names, else :data:`LAYER`; a layer other
    than workqueue (OpenMP, say) gets ``OMP_WAIT_POLICY=PASSIVE`` unless the environment says how OpenMP
    threads wait (``OMP_WAIT_POLICY`` or GNU OpenMP's ``GOMP_SPINCOUNT``).

    Parameters
    ----------
    environ : mapping, optional
        The environment to read and complete (default: ``os.environ``).

    Returns
    -------
    str
        The layer in force.

    Examples
    --------
    >>> env = {}
    >>> choose_layer(env), env
    ('workqueue', {'NUMBA_THREADING_LAYER': 'workqueue'})
    >>> env = {"NUMBA_THREADING_LAYER": "omp"}
    >>> choose_layer(env), env["OMP_WAIT_POLICY"]
    ('omp', 'PASSIVE')
    >>> env = {"NUMBA_THREADING_LAYER": "omp", "OMP_WAIT_POLICY": "active"}
    >>> choose_layer(env), env["OMP_WAIT_POLICY"]
    ('omp', 'active')
    """
    environ = os.environ if environ is None else environ
    layer = environ.get("NUMBA_THREADING_LAYER", "").strip()
    if not layer:
        layer = environ["NUMBA_THREADING_LAYER"] = LAYER
    waiting = any(environ.get(key, "").strip() for key in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"))
    if layer.lower() != "workqueue" and not waiting:
        environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return layer


def layer_problem(layer: str) -> str | None:
    """What is wrong with a threading layer the environment names, or None.

    >>> layer_problem("omp") is None
    True
    >>> print(layer_problem("openmp"))
    the environment variable NUMBA_THREADING_LAYER='openmp' names no threading layer numba knows: expected one of workqueue, omp, tbb, default, safe, threadsafe, forksafe (or leave it unset: calibrate then uses workqueue)
    """
    if layer.lower() in KNOWN_LAYERS:
        return None
    return (
        f"the environment variable NUMBA_THREADING_LAYER={layer!r} names no threading layer numba knows: "
        f"expected one of {', '.join(KNOWN_LAYERS)} (or leave it unset: calibrate then uses {LAYER})"
    )


@contextmanager
def launching() -> Iterator[None]:
    """Hold :data:`launch_lock` while a kernel runs; refuse, naming the variable, a layer numba does not know
    (raised where the kernel is launched, inside the command that needs it, not when calibrate is imported)."""
    if _PROBLEM is not None:
        raise ValueError(_PROBLEM)
    with launch_lock:
        yield


def _configure_loaded_numba(layer: str) -> None:
    """numba read its configuration when it was imported; if that happened before calibrate chose the
    layer, and numba has not started its threads yet, tell its configuration too."""
    config = sys.modules.get("numba.core.config")
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    if config is None or getattr(parallel, "_is_initialized", False):
        return
    if str(getattr(config, "THREADING_LAYER", "default")).lower() == "default":
        config.THREADING_LAYER = layer


_LAYER = choose_layer()
_PROBLEM = layer_problem(_LAYER)
if _PROBLEM is None:
    _configure_loaded_numba(_LAYER)

import numba  # noqa: E402  (after the layer is chosen: numba reads the environment as it loads)
