"""Write calibrate/__init__.pyi: the typed face of calibrate's lazy top-level names.

    .venv/bin/python scripts/write_api_stub.py [--check]

``calibrate/__init__.py`` imports nothing heavy on import: each public name is looked up in ``_EXPORTS``
when first used (``__getattr__``). Type checkers cannot follow that, so the stub says where each name
comes from (``from module import name as name``), and mypy, pyright and editors see the real signatures.
``--check`` exits 1 when the stub on disk is not the one ``_EXPORTS`` gives (tests/test_api_stub.py runs it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STUB = ROOT / "calibrate" / "__init__.pyi"


def stub_text(exports: dict[str, tuple[str, str]]) -> str:
    """The stub for ``exports`` (name -> (module, attribute)), in the order of the flow."""
    lines = [
        '"""The typed face of calibrate\'s lazy top-level names (written by scripts/write_api_stub.py from',
        '``_EXPORTS`` in calibrate/__init__.py; do not edit by hand)."""',
        "",
    ]
    for name, (module, attribute) in exports.items():
        lines.append(f"from {module} import {attribute} as {name}")
    lines += ["", "DISTRIBUTION: str", "_EXPORTS: dict[str, tuple[str, str]]", "__version__: str", "", "__all__ = ["]
    lines += [f'    "{name}",' for name in sorted(exports)]
    lines += ["]", ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the stub on disk is out of date")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from calibrate import _EXPORTS

    wanted = stub_text(_EXPORTS)
    if args.check:
        if not STUB.is_file() or STUB.read_text() != wanted:
            print(f"{STUB.relative_to(ROOT)} is out of date: run python scripts/write_api_stub.py", file=sys.stderr)
            return 1
        return 0
    STUB.write_text(wanted)
    print(f"wrote {STUB.relative_to(ROOT)} ({len(_EXPORTS)} names)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
