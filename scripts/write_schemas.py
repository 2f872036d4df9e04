"""Write the JSON schema of every typed ``--json`` document into docs/reference/schemas/, generated from
the result classes (pydantic's ``TypeAdapter(...).json_schema()`` on the frozen dataclasses), with the
``schema_version`` each document carries first.

    python scripts/write_schemas.py          # (re)write the schemas
    python scripts/write_schemas.py --check  # fail, naming the file, when one is not what the classes give

``make lint`` runs ``--check``: a change to a result class that leaves its schema behind fails there.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import TypeAdapter

from calibrate.analysis.escalate import EscalateResult
from calibrate.analysis.recommendation_results import ThresholdsResult
from calibrate.analysis.results import StatsResult
from calibrate.base.results import Document
from calibrate.review.results import AuditResult, GateResult

OUT = Path(__file__).resolve().parents[1] / "docs" / "reference" / "schemas"
#: the command whose ``--json`` prints each typed document
DOCUMENTS: dict[str, type[Document]] = {
    "stats": StatsResult,
    "thresholds": ThresholdsResult,
    "gate": GateResult,
    "audit": AuditResult,
    "escalate": EscalateResult,
}


def schema(document: type[Document]) -> dict:
    """The JSON schema of ``document``'s ``to_dict()``: its fields', with ``schema_version`` first."""
    generated = TypeAdapter(document).json_schema(mode="serialization")
    version = {"const": document.SCHEMA_VERSION, "description": "the shape of this document; changes with it"}
    generated["properties"] = {"schema_version": version, **generated["properties"]}
    generated["required"] = ["schema_version", *generated.get("required", [])]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **generated}


def texts() -> dict[Path, str]:
    return {OUT / f"{name}.json": json.dumps(schema(cls), indent=2) + "\n" for name, cls in DOCUMENTS.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only check that the written schemas are current")
    args = parser.parse_args()
    stale = [path for path, text in texts().items() if not path.is_file() or path.read_text() != text]
    if args.check:
        for path in stale:
            print(
                f"{path}: not the schema the result classes give; run python scripts/write_schemas.py", file=sys.stderr
            )
        return 1 if stale else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for path, text in texts().items():
        path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
