"""calibrate in a team's own test suite: the CI gate as a pytest assertion (:mod:`.gate`).

>>> from calibrate.testing import assert_gate_passes   # fails with the gate's reasons, one a line
"""

from calibrate.testing.gate import assert_gate_passes, gate_failure_text

__all__ = ["assert_gate_passes", "gate_failure_text"]
