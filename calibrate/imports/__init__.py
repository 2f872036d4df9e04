"""Ratings other tools already hold, brought into a campaign (``calibrate import``).

Each reader turns what a tool wrote into a :class:`~calibrate.imports.records.SourceBatch` of cases,
human and judge ratings, and the things it skipped with why: :mod:`~calibrate.imports.deepeval_runs`
(DeepEval test runs), :mod:`~calibrate.imports.ragas_results` (RAGAS results),
:mod:`~calibrate.imports.promptfoo_results` (a promptfoo eval's output),
:mod:`~calibrate.imports.inspect_logs` (an Inspect AI eval log),
:mod:`~calibrate.imports.langfuse_scores` and :mod:`~calibrate.imports.langsmith_feedback` (what their
APIs give, saved to files), and :mod:`~calibrate.imports.mlflow_traces` (an MLflow experiment's traces
and assessments) and :mod:`~calibrate.imports.phoenix_spans` (a Phoenix project's traces and
annotations), the last two over HTTP through :mod:`~calibrate.base.http`; what they share is in
:mod:`~calibrate.imports.texts`.
:func:`~calibrate.imports.apply.import_batch` brings a batch into the campaign, keeping every
revision in :mod:`~calibrate.imports.store`.
"""
