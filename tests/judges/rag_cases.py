"""The RAG cases the judge tests score: a claim the context does not hold (paris), an expected claim the
context misses (rome) and an answer that dodges the question (dodge)."""

from __future__ import annotations

RAG_CASES: list[dict] = [
    {
        "case_id": "paris",
        "input": "Where is Paris located?",
        "actual_output": "Paris is located in France. Bananas are yellow.",
        "expected_output": "Paris is located in France.",
        "retrieval_context": ["Paris is located in France.", "Bananas grow in warm places."],
    },
    {
        "case_id": "rome",
        "input": "Where is Rome located?",
        "actual_output": "Rome is located in Italy.",
        "expected_output": "Rome is located in Italy. Rome has the Colosseum.",
        "retrieval_context": ["Cheese is made from milk.", "Rome is located in Italy."],
    },
    {
        "case_id": "dodge",
        "input": "Where is Oslo located?",
        "actual_output": "I don't know where Oslo is.",
        "expected_output": "Oslo is located in Norway. Oslo is cold.",
        "retrieval_context": ["Oslo is located in Norway."],
    },
]
