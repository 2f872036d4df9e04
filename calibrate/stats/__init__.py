"""Pure statistics on arrays: agreement, bootstrap, intervals, curves, thresholds (no campaign, no I/O).

The public array-level functions, in the manner of ``sklearn.metrics``: arrays in, numbers or small
frozen results out, each parameter checked where it enters (:func:`calibrate.base.params.checked`).

- the judge's errors: :func:`error_curve` (:class:`ErrorCurve`);
- intervals of a rate: :func:`wilson_interval`, :func:`clopper_pearson_upper`; of a statistic from its
  bootstrap replicates: :func:`bca_interval`, :func:`percentile_interval`; :data:`N_BOOT` resamples;
- agreement between annotators: :func:`fleiss_kappa`, :func:`krippendorff_alpha`,
  :func:`percent_agreement`;
- a stream of cases: :func:`e_detector` (:class:`Detection`), :func:`confidence_sequence`.

They load on first use (scipy and numba are slow to import, and the command line imports
:data:`N_BOOT` from here on every start).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what mypy and the API reference read; at run time, ``__getattr__`` loads each on first use
    from calibrate.stats.annotators import fleiss_kappa, krippendorff_alpha, percent_agreement
    from calibrate.stats.bootstrap import Interval, bca_interval, percentile_interval
    from calibrate.stats.curves import ErrorCurve, error_curve
    from calibrate.stats.intervals import clopper_pearson_upper, wilson_interval
    from calibrate.stats.sequential import Detection, confidence_sequence, e_detector

#: the number of bootstrap resamples of cases, one default for every interval of every command
N_BOOT = 1000

#: the public array-level names: name -> module
_EXPORTS = {
    "ErrorCurve": "calibrate.stats.curves",
    "error_curve": "calibrate.stats.curves",
    "wilson_interval": "calibrate.stats.intervals",
    "clopper_pearson_upper": "calibrate.stats.intervals",
    "Interval": "calibrate.stats.bootstrap",
    "bca_interval": "calibrate.stats.bootstrap",
    "percentile_interval": "calibrate.stats.bootstrap",
    "fleiss_kappa": "calibrate.stats.annotators",
    "krippendorff_alpha": "calibrate.stats.annotators",
    "percent_agreement": "calibrate.stats.annotators",
    "Detection": "calibrate.stats.sequential",
    "e_detector": "calibrate.stats.sequential",
    "confidence_sequence": "calibrate.stats.sequential",
}

__all__ = [
    "N_BOOT",
    "Detection",
    "ErrorCurve",
    "Interval",
    "bca_interval",
    "clopper_pearson_upper",
    "confidence_sequence",
    "e_detector",
    "error_curve",
    "fleiss_kappa",
    "krippendorff_alpha",
    "percent_agreement",
    "percentile_interval",
    "wilson_interval",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'calibrate.stats' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
