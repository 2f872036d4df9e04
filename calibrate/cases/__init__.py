"""Where cases come from: files of other tools (DeepEval goldens and test cases, RAGAS datasets, CSV,
JSONL: :mod:`~calibrate.cases.datasets`) and a live RAG service answering the goldens
(:mod:`~calibrate.cases.collect`). Both write the campaign's ``cases.jsonl``."""
