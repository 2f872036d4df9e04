"""ZIP archives read entry by entry within limits, never trusting their declared sizes
(calibrate/imports/archives.py). The Inspect log attacks through the reader: tests/imports/test_inspect_logs.py."""

import sys
import zipfile
import zlib
from pathlib import Path

import pytest

from calibrate.base.documents import DocumentError
from calibrate.base.errors import CampaignError
from calibrate.imports import archives
from calibrate.imports.archives import ZSTANDARD, BoundedZip
from tests.imports.test_inspect_logs import archive, deflated, zstd_rle

TEXT = b'{"answer": "Paris"}' * 50


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_each_compression_reads_the_same_bytes(tmp_path, method):
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w", method) as out:
        out.writestr("b.json", TEXT)
        out.writestr("a.json", b"{}")
    with BoundedZip(path, expected="a log") as log:
        assert log.names == ["b.json", "a.json"]
        assert bytes(log.read("b.json")) == TEXT and bytes(log.read("a.json")) == b"{}"
        assert log.read_so_far == len(TEXT) + 2
    assert log.raw is None  # closed on leaving


def test_a_zstandard_entry_is_read_and_without_the_package_names_the_extra(tmp_path, monkeypatch):
    zstandard = pytest.importorskip("zstandard")
    path = archive(tmp_path / "z.eval", {"h.json": (zstandard.ZstdCompressor().compress(TEXT), ZSTANDARD, TEXT)})
    with BoundedZip(path, expected="a log") as log:
        assert bytes(log.read("h.json")) == TEXT
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with (
        BoundedZip(path, expected="a log") as log,
        pytest.raises(CampaignError, match=r"pip install 'calibrate-judges\[imports\]'"),
    ):
        log.read("h.json")


def test_all_entries_together_stay_under_the_limit(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = Path("a.zip")  # a short name: the message below is cut at 200 characters
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("one", b" " * 600)
        out.writestr("two", b" " * 600)
    with BoundedZip(path, expected="a log", max_bytes=1000) as log:
        log.read("one")
        with pytest.raises(DocumentError, match=r"entry 'two' takes the archive past 1,000 bytes decompressed"):
            log.read("two")
    # a file too large is said as such, not as a damaged archive
    with pytest.raises(DocumentError, match=r"bytes, more than the 10 calibrate reads") as refused:
        BoundedZip(path, expected="a log", max_bytes=10)
    assert "not a readable ZIP archive" not in str(refused.value)
    assert "CALIBRATE_MAX_DOCUMENT_MB raises the limit" in str(refused.value)


def test_an_entry_expanding_past_the_ratio_is_a_bomb_whatever_it_declares(tmp_path, monkeypatch):
    monkeypatch.setattr(archives, "RATIO_FLOOR", 4096)
    monkeypatch.setattr(archives, "CHUNK", 4096)
    plain = b" " * 2**20
    path = archive(
        tmp_path / "bomb.zip", {"big.json": (deflated(plain), zipfile.ZIP_DEFLATED)}, declared=10, crc=zlib.crc32(plain)
    )
    with (
        BoundedZip(path, expected="a log") as log,
        pytest.raises(DocumentError, match=r"'big\.json' decompresses to more than 200 times"),
    ):
        log.read("big.json")
    if pytest.importorskip("zstandard"):
        rle = archive(tmp_path / "rle.zip", {"big.json": (zstd_rle(2**20), ZSTANDARD)}, declared=10)
        with BoundedZip(rle, expected="a log") as log, pytest.raises(DocumentError, match="a ZIP bomb"):
            log.read("big.json")


@pytest.mark.parametrize(
    ("entries", "options", "message"),
    [
        ({"h.json": (deflated(TEXT), zipfile.ZIP_DEFLATED, TEXT)}, {"crc": 1}, "Bad CRC-32"),
        ({"h.json": (TEXT, 99)}, {}, "entry 'h.json' is compressed with method 99, which calibrate does not read"),
        ({"h.json": (TEXT, zipfile.ZIP_STORED, TEXT)}, {"flags": 1}, "entry 'h.json' is encrypted"),
        ({"h.json": (b"\xff" * 40, zipfile.ZIP_DEFLATED, TEXT)}, {}, "entry 'h.json' cannot be read"),
    ],
)
def test_a_damaged_entry_is_refused_naming_the_file_and_the_entry(tmp_path, entries, options, message):
    path = archive(tmp_path / "a.zip", entries, **options)
    with BoundedZip(path, expected="a log") as log, pytest.raises(DocumentError) as refused:
        log.read("h.json")
    assert message in str(refused.value) and str(path) in str(refused.value)


def test_a_file_that_is_no_archive_is_refused(tmp_path):
    path = tmp_path / "log.eval"
    path.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(DocumentError, match=r"not a readable ZIP archive \(BadZipFile"):
        BoundedZip(path, expected="a log")
    with pytest.raises(DocumentError, match=r"cannot be read|not a readable ZIP archive"):
        BoundedZip(tmp_path / "absent.eval", expected="a log")
