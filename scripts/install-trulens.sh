#!/usr/bin/env bash
# TruLens for the peer benchmark (bench/bench_trulens.py), in its own virtual environment (.trulens-venv;
# it pins its own pydantic, SQLAlchemy, OpenTelemetry and pandas). No test needs it.
# trulens-benchmark holds AlignmentReport (trulens.benchmark.alignment_report) and brings trulens-core
# and trulens-feedback (GroundTruthAggregator, which computes each of its metrics). pyarrow, at the
# project's pin (constraints/tested.txt), lets it read the campaign's ratings.parquet, the file
# `calibrate stats` reads. AlignmentReport starts no TruSession, dashboard or trace exporter, so sends
# nothing; the benchmark still runs it with OpenTelemetry's SDK disabled and DO_NOT_TRACK set.
set -euo pipefail
VENV="${TRULENS_VENV:-.trulens-venv}"
bash "$(dirname "$0")/install-tool-venv.sh" "$VENV" trulens-benchmark 2.16.0 python
if ! "$VENV/bin/python" -c "import importlib.metadata as m; assert m.version('pyarrow') == '26.0.1'" 2>/dev/null; then
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check pyarrow==26.0.1
fi
