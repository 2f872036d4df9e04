"""calibrate import inspect: a real Inspect AI eval (its own virtual environment, .inspect-venv) of a
mockllm application, scored by two model_graded_qa graders of different families (mockllm models, each
with its own planted behaviour: a careful one and a lenient one) and a code scorer, human ratings made
with Inspect's own edit_score; the .eval and .json logs Inspect wrote imported, every value Inspect's,
the careful grader's verdicts and the humans recovered, kappa equal to scikit-learn's, idempotent, a
changed edit a new revision."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score

from calibrate import CampaignError, load_campaign
from calibrate.imports.inspect_logs import import_inspect, read_inspect_log
from calibrate.imports.store import ImportStore
from tests.conftest import need
from tests.imports.common import CITIES, SUPPORTED, run, written
from tests.imports.common import new_campaign as make_campaign

INSPECT_VENV = Path(__file__).resolve().parents[2] / ".inspect-venv"
PYTHON = INSPECT_VENV / "bin" / "python"
N = len(CITIES)
ALICE = [s != (i in (3, 4)) for i, s in enumerate(SUPPORTED)]  # alice disagrees with the careful grader twice
BOB = {i: ALICE[i] for i in (1, 2, 5, 8)}  # bob rated four samples, as alice did
UNDECIDED = 6  # Berlin: the careful grader gives no grade
NAMED = 12  # the first samples carry metadata.case_id
CAREFUL, LENIENT = "mockllm/qwen-careful", "mockllm/llama-lenient"

TASK = """
import json, re, sys
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes, model_graded_qa
from inspect_ai.solver import generate

cities, supported, named, undecided = [json.loads(a) for a in sys.argv[1:5]]
USAGE = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)   # mockllm counts tokens with tiktoken otherwise


def output(model, text):
    out = ModelOutput.from_content(model=model, content=text)
    out.usage = USAGE
    return out


answers = {f"Where is {c}?": f"{c} is in {k if ok else cities[(i + 1) % len(cities)][1]}."
           for i, ((c, k), ok) in enumerate(zip(cities, supported))}


def app(messages, tools, tool_choice, config):
    return output("rag-app", answers[messages[-1].text])


def grader(model, persona):
    def grade(messages, tools, tool_choice, config):
        prompt = messages[-1].text
        submission = re.search(r"\\[Submission\\]: (.*?)\\n", prompt).group(1)
        criterion = re.search(r"\\[Criterion\\]: (.*?)\\n", prompt).group(1)
        if persona == "careful" and cities[undecided][0] in submission:
            return output(model, "The submission is hard to judge.")
        ok = persona == "lenient" or submission.strip() == criterion.strip()
        return output(model, "Compared the submission with the criterion.\\nGRADE: " + ("C" if ok else "I"))
    return grade


samples = [Sample(input=f"Where is {c}?", target=f"{c} is in {k}.", id=c.lower(),
                  metadata={"context": [f"{c} is in {k}."], "topic": "geography",
                            **({"case_id": c.lower()} if i < named else {})})
           for i, (c, k) in enumerate(cities)]
task = Task(dataset=samples, solver=generate(), name="capitals",
            scorer=[model_graded_qa(model=get_model("mockllm/qwen-careful",
                                                    custom_outputs=grader("qwen-careful", "careful"))),
                    model_graded_qa(model=get_model("mockllm/llama-lenient",
                                                    custom_outputs=grader("llama-lenient", "lenient"))),
                    includes()])
[log] = eval(task, model=get_model("mockllm/rag-app", custom_outputs=app), log_dir="logs", display="none")
print(json.dumps({"location": log.location, "status": log.status}))
"""

EDIT = """
import json, sys
from inspect_ai.log import ProvenanceData, edit_score, read_eval_log, write_eval_log
from inspect_ai.scorer import ScoreEdit, value_to_float

source, target, edits = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
log = read_eval_log(source)
for sample_id, author, grade, reason in edits:
    edit_score(log, sample_id, "model_graded_qa",
               ScoreEdit(value=grade, provenance=ProvenanceData(author=author, reason=reason)))
write_eval_log(log, target, format="json" if target.endswith(".json") else "eval")
to_float = value_to_float()
print(json.dumps({s.id: {name: {"value": score.value if isinstance(score.value, str) else None,
                                "float": None if score.value != score.value else to_float(score.value),
                                "history": [[h.value, h.provenance.author if h.provenance else None]
                                            for h in score.history]}
                         for name, score in s.scores.items()} for s in read_eval_log(target).samples}))
"""


def inspect(folder: Path, script: str, *args: str) -> object:
    (folder / "script.py").write_text(script)
    env = {k: v for k, v in os.environ.items() if not k.startswith("INSPECT_")}
    done = subprocess.run(
        [str(PYTHON), "script.py", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={**env, "INSPECT_DISPLAY": "none", "PYTHONNOUSERSITE": "1"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """The .eval log Inspect wrote, and copies with human edits (as .eval and .json), with what Inspect reads
    in each."""
    need(PYTHON.exists(), f"Inspect AI ({INSPECT_VENV}; run scripts/install-inspect.sh)")
    folder = tmp_path_factory.mktemp("inspect")
    done = inspect(folder, TASK, json.dumps(CITIES), json.dumps(SUPPORTED), str(NAMED), str(UNDECIDED))
    assert done["status"] == "success"
    original = Path(done["location"])
    edits = [[c.lower(), "alice", "C" if ALICE[i] else "I", "read it"] for i, (c, _) in enumerate(CITIES)]
    edits += [[CITIES[i][0].lower(), "bob", "C" if v else "I", None] for i, v in BOB.items()]
    edited = inspect(folder, EDIT, str(original), str(folder / "edited.eval"), json.dumps(edits))
    inspect(folder, EDIT, str(folder / "edited.eval"), str(folder / "edited.json"), "[]")  # the same log, as JSON
    again = inspect(
        folder,
        EDIT,
        str(folder / "edited.eval"),
        str(folder / "edited-again.eval"),
        json.dumps([["rome", "alice", "I" if ALICE[1] else "C", "looked again"]]),
    )
    return {
        "original": original,
        "edited": folder / "edited.eval",
        "json": folder / "edited.json",
        "again": folder / "edited-again.eval",
        "read": edited,
        "read_again": again,
    }


def new_campaign(tmp_path):
    return make_campaign(tmp_path / "capitals", "correctness")


def test_scores_are_judges_edits_humans_and_every_value_inspects(logs, tmp_path):
    folder = new_campaign(tmp_path)
    doc = json.loads(
        run("import", "inspect", str(folder), str(logs["edited"]), "--map", "model_graded_qa=correctness", "--json")
    )
    assert doc["cases"]["added"] == N
    assert set(doc["raters"]) == {CAREFUL, LENIENT, "alice", "bob"}
    assert doc["by_metric"] == {"correctness": {"human": N + len(BOB), "judge": 2 * N}}
    [skip] = [g for g in doc["skipped_by_reason"] if "'includes'" in g["reason"]]
    assert skip["count"] == N
    c = load_campaign(folder)
    by_input = {case["input"]: case_id for case_id, case in c.cases.items()}
    ids = [by_input[f"Where is {city}?"] for city, _ in CITIES]
    assert ids[:NAMED] == [city.lower() for city, _ in CITIES[:NAMED]] and all(
        i.startswith("case-") for i in ids[NAMED:]
    )
    paris = c.cases["paris"]
    assert paris["expected_output"] == "Paris is in France." and paris["retrieval_context"] == ["Paris is in France."]
    assert paris["metadata"]["topic"] == "geography" and paris["metadata"]["task"] == "capitals"
    assert paris["metadata"]["sample_id"] == "paris" and paris["metadata"]["model"] == "mockllm/rag-app"
    ratings = c.ratings.set_index(["case_id", "rater"])
    for i, (city, _) in enumerate(CITIES):
        read = logs["read"][city.lower()]
        original_careful = read["model_graded_qa"]["history"][0]
        assert original_careful[1] is None  # the scorer's own value, before the edits
        if i == UNDECIDED:  # the careful grader gave no grade: a failed rating with Inspect's reason
            row = ratings.loc[(ids[i], CAREFUL)]
            assert row["value"] != row["value"] and "grader" in row["error"]
        else:
            assert (
                ratings.loc[(ids[i], CAREFUL), "value"]
                == {"C": 1.0, "I": 0.0}[original_careful[0]]
                == float(SUPPORTED[i])
            )
        assert ratings.loc[(ids[i], LENIENT), "value"] == read["model_graded_qa1"]["float"] == 1.0
        assert ratings.loc[(ids[i], "alice"), "value"] == float(ALICE[i])
        assert ratings.loc[(ids[i], "alice"), "reason"] == "read it"
        if i in BOB:
            assert ratings.loc[(ids[i], "bob"), "value"] == float(BOB[i]) == read["model_graded_qa"]["float"]
    stats = json.loads(run("stats", str(folder), "--json", "--n-boot", "200"))
    judges = {j["judge"]: j for j in stats["metrics"][0]["judges"]}
    kept = [i for i in range(N) if i != UNDECIDED]
    assert judges[CAREFUL]["family"] == "qwen" and judges[LENIENT]["family"] == "llama"
    assert judges[CAREFUL]["n"] == N - 1  # the undecided case is a failed rating, out of the statistics
    assert judges[CAREFUL]["kappa"]["estimate"] == pytest.approx(
        cohen_kappa_score([int(ALICE[i]) for i in kept], [int(SUPPORTED[i]) for i in kept]), abs=1e-12
    )
    # the lenient grader passes everything: kappa 0, as scikit-learn says, and no threshold keeps false passes down
    assert judges[LENIENT]["kappa"]["estimate"] == cohen_kappa_score([int(a) for a in ALICE], [1] * N) == 0.0
    assert judges[LENIENT]["accuracy"]["estimate"] is None and "no threshold" in judges[LENIENT]["accuracy"]["reason"]


def test_the_json_log_reads_as_the_eval_log(logs):
    archive, text = read_inspect_log(logs["edited"]), read_inspect_log(logs["json"])
    assert sorted(map(repr, archive.ratings)) == sorted(map(repr, text.ratings))
    assert sorted(c["case_id"] for c in archive.cases) == sorted(c["case_id"] for c in text.cases)


def test_importing_twice_changes_nothing_and_a_new_edit_is_a_revision(logs, tmp_path):
    folder = new_campaign(tmp_path)
    first = json.loads(
        run("import", "inspect", str(folder), str(logs["original"]), "--map", "model_graded_qa=correctness", "--json")
    )
    assert first["by_metric"] == {"correctness": {"human": 0, "judge": 2 * N}}
    run("import", "inspect", str(folder), str(logs["edited"]), "--map", "model_graded_qa=correctness")
    files = written(folder)
    again = json.loads(
        run("import", "inspect", str(folder), str(logs["edited"]), "--map", "model_graded_qa=correctness", "--json")
    )
    assert again["ratings"]["new"] == again["ratings"]["changed"] == 0
    assert written(folder) == files
    doc = json.loads(
        run("import", "inspect", str(folder), str(logs["again"]), "--map", "model_graded_qa=correctness", "--json")
    )
    assert doc["ratings"]["changed"] == 1 and doc["ratings"]["new"] == 0
    assert logs["read_again"]["rome"]["model_graded_qa"]["history"][-1] == ["I" if ALICE[1] else "C", "alice"]
    store = ImportStore(folder)
    history = [h for h in store.history() if h["case_id"] == "rome" and h["rater"] == "alice"]
    store.close()
    assert [h["value"] for h in history] == [float(ALICE[1]), float(not ALICE[1])]


def test_a_log_that_is_no_inspect_log_is_refused_naming_it(tmp_path):
    for name, content in (
        ("broken.eval", b"PK\x03\x04 not a zip"),
        ("other.json", b'{"samples": []}'),
        ("binary.json", b"\xff\xfe\x00"),
    ):
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(CampaignError) as caught:
            read_inspect_log(path)
        assert str(path) in str(caught.value)


def test_a_zstandard_log_without_zstandard_names_the_extra(logs, tmp_path):
    script = (
        "import sys; sys.modules['zstandard'] = None\n"
        "from calibrate.imports.inspect_logs import read_inspect_log\n"
        f"read_inspect_log({str(logs['original'])!r})\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode != 0 and "pip install 'calibrate-judges[imports]'" in done.stderr


# ------------------------------------------------------------------------------------ archives attacked
# Issue 24: a 64 KB .eval took 4.3 GB of memory. An archive is read entry by entry within limits,
# never trusting its declared sizes: a bomb, a damaged entry or an absurd size is a clear error naming
# the file and the entry, in little memory and time.

import struct  # noqa: E402
import tracemalloc  # noqa: E402
import zipfile  # noqa: E402
import zlib  # noqa: E402

from calibrate.base.documents import DocumentError  # noqa: E402
from calibrate.imports.archives import ZSTANDARD, BoundedZip  # noqa: E402

HEADER = json.dumps(
    {
        "status": "success",
        "eval": {
            "task": "qa",
            "eval_id": "e1",
            "scorers": [{"name": "model_graded_qa", "options": {"model": "openai/gpt-4o"}}],
        },
    }
).encode()
SAMPLE = json.dumps(
    {
        "id": 1,
        "epoch": 1,
        "input": "q?",
        "target": "a",
        "output": {"completion": "a."},
        "scores": {"model_graded_qa": {"value": "C"}},
    }
).encode()


def zstd_rle(total: int, byte: int = 0x20) -> bytes:
    """A Zstandard frame of ``total`` copies of one byte, in RLE blocks: 4 bytes per 128 KiB, no content
    size declared (4 GiB in 128 KiB)."""
    out, left, block = bytearray(b"\x28\xb5\x2f\xfd\x00\x38"), total, 128 * 1024
    while left > 0:
        size = min(block, left)
        left -= size
        out += ((size << 3) | (1 << 1) | (left == 0)).to_bytes(3, "little") + bytes([byte])
    return bytes(out)


def archive(
    path: Path, entries: dict[str, tuple], *, declared: int | None = None, crc: int | None = None, flags: int = 0
) -> Path:
    """A ZIP archive whose entries hold the given bytes *as compressed*: ``name -> (payload, method[,
    plain])``. The CRC and size it declares are those of ``plain`` (when given), else ``declared`` and
    ``crc``, which override them for every entry when given."""
    with zipfile.ZipFile(path, "w") as out:
        for name, (payload, *_) in entries.items():
            out.writestr(zipfile.ZipInfo(name), payload)
    with zipfile.ZipFile(path) as written:
        locals_ = [info.header_offset for info in written.infolist()]
        central = written.start_dir
    data = bytearray(path.read_bytes())
    methods = [entry[1] for entry in entries.values()]
    plains = [entry[2] if len(entry) > 2 else None for entry in entries.values()]
    headers = [(at, (8, 6, 14, 22)) for at in locals_]  # local headers: method, flags, crc, size
    for _ in entries:  # central directory entries, one after another
        headers.append((central, (10, 8, 16, 24)))
        name, extra, comment = struct.unpack_from("<HHH", data, central + 28)
        central += 46 + name + extra + comment
    for i, (at, (method_at, flags_at, crc_at, size_at)) in enumerate(headers):
        struct.pack_into("<H", data, at + method_at, methods[i % len(methods)])
        struct.pack_into("<H", data, at + flags_at, flags)
        plain = plains[i % len(plains)]
        if crc is not None or plain is not None:
            struct.pack_into("<I", data, at + crc_at, crc if crc is not None else zlib.crc32(plain))
        if declared is not None or plain is not None:
            struct.pack_into("<I", data, at + size_at, declared if declared is not None else len(plain))
    path.write_bytes(bytes(data))
    return path


def deflated(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


def refused(path: Path, entry: str | None, *words: str) -> str:
    """read_inspect_log(path) refused with a DocumentError naming the file (and the entry), in little
    memory; the message."""
    tracemalloc.start()
    try:
        with pytest.raises(DocumentError) as caught:
            read_inspect_log(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    text = str(caught.value)
    assert str(path) in text and (entry is None or repr(entry) in text or entry in text), text
    assert all(word in text for word in words), text
    assert peak < 200 * 2**20, f"{peak / 2**20:.0f} MiB to refuse {path.name}"
    return text


def test_a_zstandard_bomb_is_refused_naming_the_entry_in_little_memory(tmp_path):
    pytest.importorskip("zstandard")
    bomb = zstd_rle(4 * 2**30)  # 4 GiB of spaces in 128 KiB
    header = archive(tmp_path / "header.eval", {"header.json": (bomb, ZSTANDARD)}, declared=len(HEADER))
    refused(header, "header.json", "decompresses to more than 200 times its", "compressed bytes: a ZIP bomb")
    sample = archive(
        tmp_path / "sample.eval",
        {"header.json": (HEADER, zipfile.ZIP_STORED, HEADER), "samples/1_epoch_1.json": (bomb, ZSTANDARD)},
    )
    refused(sample, "samples/1_epoch_1.json", "a ZIP bomb")


def test_a_deflate_bomb_is_refused_naming_the_entry_in_little_memory(tmp_path):
    bomb = deflated(b" " * (128 * 2**20))  # 128 MiB of spaces in 128 KiB, declaring 4 GB
    path = archive(
        tmp_path / "log.eval",
        {"header.json": (HEADER, zipfile.ZIP_STORED), "samples/1_epoch_1.json": (bomb, zipfile.ZIP_DEFLATED)},
        declared=2**32 - 2,
    )
    refused(path, "samples/1_epoch_1.json", "a ZIP bomb")


def test_the_size_limit_holds_for_all_entries_together(tmp_path, monkeypatch):
    """Many entries under the ratio rule still stop at the limit of one document (CALIBRATE_MAX_DOCUMENT_MB)."""
    from calibrate.base import documents

    monkeypatch.setattr(documents, "MAX_DOCUMENT_BYTES", 5 * 2**20)
    entries = {"header.json": (HEADER, zipfile.ZIP_STORED, HEADER)}
    entries |= {
        f"samples/{i}_epoch_1.json": (deflated(b" " * 2**20 + SAMPLE), zipfile.ZIP_DEFLATED, b" " * 2**20 + SAMPLE)
        for i in range(8)
    }
    path = archive(tmp_path / "log.eval", entries)
    refused(path, None, "takes the archive past 5,242,880 bytes decompressed", "CALIBRATE_MAX_DOCUMENT_MB")


@pytest.mark.parametrize(
    "kind",
    [
        "not a zip",
        "truncated",
        "absurd size",
        "deflate declaring less",
        "bad crc",
        "zstd garbage",
        "lzma garbage",
        "unknown method",
        "encrypted",
        "deep header",
        "sample not utf-8",
        "no header",
    ],
)
def test_a_damaged_archive_is_refused_naming_the_file_and_entry(tmp_path, kind):
    pytest.importorskip("zstandard")
    path = tmp_path / "log.eval"
    good = {"header.json": (HEADER, zipfile.ZIP_STORED), "samples/1_epoch_1.json": (SAMPLE, zipfile.ZIP_STORED)}
    if kind == "not a zip":
        path.write_bytes(b"PK\x03\x04 not a zip")
        refused(path, None, "not a readable ZIP archive")
    elif kind == "truncated":
        archive(path, good)
        path.write_bytes(path.read_bytes()[:-30])
        refused(path, None, "not a readable ZIP archive")
    elif kind == "absurd size":  # a stored entry declaring 4 GB, and a CRC that is not its own
        archive(path, good, declared=2**32 - 2, crc=0)
        refused(path, "header.json", "cannot be read")
    elif kind == "deflate declaring less":  # declared smaller than it is: read whole, its CRC checked
        archive(path, {"header.json": (deflated(HEADER), zipfile.ZIP_DEFLATED, HEADER[:10])})
        refused(path, "header.json", "Bad CRC-32")
    elif kind == "bad crc":
        archive(path, good, crc=12345)
        refused(path, "header.json", "Bad CRC-32")
    elif kind == "zstd garbage":
        archive(path, {"header.json": (b"\x28\xb5\x2f\xfd" + b"\xff" * 100, ZSTANDARD)})
        refused(path, "header.json", "ZstdError")
    elif kind == "lzma garbage":
        archive(path, {"header.json": (b"\x00" * 40, zipfile.ZIP_LZMA)})
        refused(path, "header.json", "LZMAError")
    elif kind == "unknown method":
        archive(path, {"header.json": (HEADER, 99)})
        refused(path, "header.json", "method 99, which calibrate does not read")
    elif kind == "encrypted":
        archive(path, good, flags=1)
        refused(path, "header.json", "is encrypted")
    elif kind == "deep header":
        archive(path, {"header.json": (b"[" * 100_000 + b"]" * 100_000, zipfile.ZIP_STORED)})
        refused(path, "header.json", "nested deeper than 200 levels")
    elif kind == "sample not utf-8":
        archive(path, {**good, "samples/2_epoch_1.json": (b"\xff{", zipfile.ZIP_STORED)})
        refused(path, "samples/2_epoch_1.json", "not UTF-8 text")
    else:
        archive(path, {"samples/1_epoch_1.json": (SAMPLE, zipfile.ZIP_STORED)})
        refused(path, None, "without header.json")


def test_declared_sizes_are_not_trusted(tmp_path):
    """An entry declaring 4 GB is read as what it holds (the declared size is no allocation)."""
    path = archive(
        tmp_path / "log.eval",
        {
            "header.json": (HEADER, zipfile.ZIP_STORED, HEADER),
            "samples/1_epoch_1.json": (SAMPLE, zipfile.ZIP_STORED, SAMPLE),
        },
    )
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, 22, 2**32 - 2)  # the first local header's uncompressed size
    path.write_bytes(bytes(data))
    tracemalloc.start()
    try:
        assert [r.value for r in read_inspect_log(path).ratings] == [1.0]
        assert tracemalloc.get_traced_memory()[1] < 50 * 2**20
    finally:
        tracemalloc.stop()


def test_a_valid_archive_of_each_compression_reads_alike(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    ratings = []
    for method, pack in (
        (zipfile.ZIP_STORED, bytes),
        (zipfile.ZIP_DEFLATED, deflated),
        (ZSTANDARD, zstandard.ZstdCompressor().compress),
    ):
        path = archive(
            tmp_path / f"log-{method}.eval",
            {"header.json": (pack(HEADER), method, HEADER), "samples/1_epoch_1.json": (pack(SAMPLE), method, SAMPLE)},
        )
        with BoundedZip(path, expected="a log") as log:
            assert bytes(log.read("samples/1_epoch_1.json")) == SAMPLE
        ratings.append([(r.metric, r.rater, r.value) for r in read_inspect_log(path).ratings])
    assert ratings == [[("model_graded_qa", "openai/gpt-4o", 1.0)]] * 3


def test_a_malformed_sample_or_score_is_skipped_saying_where(tmp_path):
    log = {
        "eval": {"eval_id": "e1", "scorers": [{"name": "model_graded_qa"}]},
        "samples": [
            {"id": 1, "input": "q?", "output": {"completion": 5}},
            {
                "id": 2,
                "input": "r?",
                "output": {"completion": "b."},
                "scores": {
                    "model_graded_qa": {"value": "C", "explanation": ["not text"]},
                    "other": {"value": "I", "history": [{"value": "C", "provenance": {"author": 7}}]},
                },
            },
        ],
    }
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    batch = read_inspect_log(path)
    reasons = {s.what: s.reason for s in batch.skipped}
    assert reasons["e1#samples[0]"] == (
        "not an Inspect sample: output.completion: Input should be a valid string (found 5)"
    )
    assert reasons["e1#2/epoch1/model_graded_qa"].startswith("not an Inspect score: explanation: Input should be")
    assert reasons["e1#2/epoch1/other/edit0"].startswith("not an Inspect score edit: provenance.author:")
    assert [(r.metric, r.value) for r in batch.ratings] == [("other", 0.0)]


def test_rater_equal_to_an_editor_is_refused_not_a_silent_drop(tmp_path):
    """Issue 24: --rater equal to the source's own annotator dropped the human labels."""
    log = {
        "eval": {"scorers": [{"name": "model_graded_qa", "options": {"model": "openai/gpt-4o"}}]},
        "samples": [
            {
                "id": 1,
                "input": "q?",
                "output": {"completion": "a."},
                "scores": {
                    "model_graded_qa": {
                        "value": "C",
                        "history": [{"value": "C"}, {"value": "I", "provenance": {"author": "alice"}}],
                    }
                },
            }
        ],
    }
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    folder = make_campaign(tmp_path / "c", "correctness")
    with pytest.raises(ValueError, match="holds human ratings by 'alice' too"):
        import_inspect(folder, path, metric_map={"model_graded_qa": "correctness"}, rater="alice")
    doc = import_inspect(folder, path, metric_map={"model_graded_qa": "correctness"}, rater="careful-grader")
    assert {name: r["kind"] for name, r in doc["raters"].items()} == {"alice": "human", "careful-grader": "judge"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    method=st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, ZSTANDARD]),
    damage=st.lists(st.tuples(st.integers(0, 10**6), st.binary(min_size=1, max_size=4)), max_size=4),
    cut=st.none() | st.integers(0, 10**6),
)
def test_any_damage_to_an_eval_archive_is_read_or_refused_naming_it(tmp_path_factory, method, damage, cut):
    zstandard = pytest.importorskip("zstandard")
    pack = {zipfile.ZIP_STORED: bytes, zipfile.ZIP_DEFLATED: deflated, ZSTANDARD: zstandard.ZstdCompressor().compress}[
        method
    ]
    path = archive(
        tmp_path_factory.mktemp("eval") / "log.eval",
        {"header.json": (pack(HEADER), method, HEADER), "samples/1_epoch_1.json": (pack(SAMPLE), method, SAMPLE)},
    )
    data = bytearray(path.read_bytes())
    for at, replacement in damage:
        at %= len(data)
        data[at : at + len(replacement)] = replacement
    path.write_bytes(bytes(data[: cut % (len(data) + 1)] if cut is not None else data))
    try:
        batch = read_inspect_log(path)
    except CampaignError as exc:
        assert str(path) in str(exc)
        return
    assert all(r.value in (0.0, 0.5, 1.0) for r in batch.ratings)
