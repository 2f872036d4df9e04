"""ZIP archives other tools write (an Inspect ``.eval`` log), read entry by entry within limits.

An archive says how large each entry is, and nothing holds it to it: a 64 KB file can decompress to
gigabytes (a ZIP or Zstandard bomb). :class:`BoundedZip` never trusts the declared sizes: it
stream-decompresses each entry in chunks and stops as soon as

- all the entries read so far hold more than the size limit of one document
  (:data:`~calibrate.base.documents.MAX_DOCUMENT_BYTES`, ``CALIBRATE_MAX_DOCUMENT_MB``), or
- an entry larger than :data:`RATIO_FLOOR` has decompressed to more than :data:`MAX_RATIO` times the
  compressed bytes it consumed so far (no log compresses so well; a bomb does, and is stopped after
  :data:`RATIO_FLOOR` however large it is),

with a :class:`~calibrate.base.documents.DocumentError` naming the file and the entry. A damaged
archive, a damaged entry, an encrypted entry or a compression calibrate does not read are the same
clear error. Deflate entries are decompressed here (their CRC checked at the end, as :mod:`zipfile`
does), Zstandard entries (method 93, which Python's :mod:`zipfile` reads only from 3.14) with the
``zstandard`` package, the others (stored, bzip2, LZMA) by :mod:`zipfile`, the ratio measured against
their whole compressed size.
"""

from __future__ import annotations

import io
import lzma
import struct
import zipfile
import zlib
from pathlib import Path

from calibrate.base import documents
from calibrate.base.documents import DocumentError
from calibrate.base.errors import CampaignError, Problem
from calibrate.base.secrets import clip

__all__ = ["MAX_RATIO", "RATIO_FLOOR", "ZSTANDARD", "BoundedZip"]

#: the ZIP compression method number of Zstandard
ZSTANDARD = 93
#: the most an entry may expand (decompressed bytes per compressed byte) once past :data:`RATIO_FLOOR`:
#: JSON compresses 5 to 50 times; a bomb of one repeated byte 1,000 times (Deflate) to millions (Zstandard)
MAX_RATIO = 200
#: the size below which an entry may expand any amount
RATIO_FLOOR = 64 * 2**20
CHUNK = 2**20
#: the compression methods read: stored, deflated, bzip2, LZMA, Zstandard
METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA, ZSTANDARD}
#: what a damaged entry raises while it is read (zstandard's ZstdError is a subclass of Exception only,
#: told by its module)
DAMAGED = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    RuntimeError,
    NotImplementedError,
    ValueError,
    struct.error,
    OverflowError,
    MemoryError,
)


class BoundedZip:
    """A ZIP archive read within limits (see the module docstring); a context manager.

    Parameters
    ----------
    path : str or Path
    expected : str
        What the archive should be, for the errors (``"an Inspect AI eval log"``).
    max_bytes : int, optional
        The most all entries read may hold, decompressed
        (:data:`~calibrate.base.documents.MAX_DOCUMENT_BYTES` by default); the file itself is refused
        when larger.

    Raises
    ------
    DocumentError
        A file that cannot be read, too large, or not a ZIP archive, naming it.

    Examples
    --------
    >>> import tempfile, pathlib, zipfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "log.eval"
    >>> with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
    ...     archive.writestr("header.json", '{"eval": {}}')
    ...     archive.writestr("samples/1_epoch_1.json", " " * 5000)
    >>> with BoundedZip(path, expected="a log") as log:
    ...     log.names, bytes(log.read("header.json"))
    (['header.json', 'samples/1_epoch_1.json'], b'{"eval": {}}')
    >>> with BoundedZip(path, expected="a log", max_bytes=1000) as log:   # doctest: +ELLIPSIS
    ...     _ = log.read("samples/1_epoch_1.json")
    Traceback (most recent call last):
    ...
    calibrate.base.documents.DocumentError: 1 problem in ...log.eval:
      ...log.eval: entry 'samples/1_epoch_1.json' takes the archive past 1,000 bytes decompressed (the entry: ... bytes compressed so far): ...
    """

    def __init__(self, path: str | Path, *, expected: str, max_bytes: int | None = None):
        self.path = Path(path)
        self.expected = expected
        self.limit = documents.MAX_DOCUMENT_BYTES if max_bytes is None else max_bytes
        self.read_so_far = 0
        self.raw: io.BufferedReader | None = None
        try:
            self.size = self.path.stat().st_size
            if self.size > self.limit:
                raise self._error(
                    f"{self.size:,} bytes, more than the {self.limit:,} calibrate reads at once",
                    expected + " (CALIBRATE_MAX_DOCUMENT_MB raises the limit)",
                )
            self.raw = self.path.open("rb")
            self.archive = zipfile.ZipFile(self.raw)
            self.infos = {info.filename: info for info in self.archive.infolist()}
        except DocumentError:  # the size refused above: said as it is, not as a damaged archive
            self.close()
            raise
        except DAMAGED as exc:
            self.close()
            raise self._error(f"not a readable ZIP archive ({type(exc).__name__}: {clip(exc, 200)})") from None

    @property
    def names(self) -> list[str]:
        """The entries' names, in the archive's order."""
        return list(self.infos)

    def __enter__(self) -> BoundedZip:
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def close(self) -> None:
        if self.raw is not None:
            self.raw.close()
            self.raw = None

    def _error(self, message: str, expected: str | None = None) -> DocumentError:
        return DocumentError(
            [Problem(str(self.path), message, expected=expected or self.expected)], source=str(self.path)
        )

    def read(self, name: str) -> bytearray:
        """The entry ``name``, decompressed within the limits.

        Raises
        ------
        DocumentError
            An entry that is damaged, encrypted, compressed in a way calibrate does not read, or
            larger than the limits allow, naming the file and the entry.
        CampaignError
            A Zstandard entry without the ``zstandard`` package, saying what to install.
        """
        info = self.infos[name]
        if info.flag_bits & 0x1:
            raise self._error(f"entry {name!r} is encrypted")
        if info.compress_type not in METHODS:
            raise self._error(
                f"entry {name!r} is compressed with method {info.compress_type}, which calibrate does not read"
            )
        try:
            stream, consumed = self._open(info)
            with stream:
                return self._bounded(stream, info, consumed)
        except (DocumentError, CampaignError):
            raise
        except Exception as exc:  # DAMAGED, and zstandard's ZstdError
            if not isinstance(exc, DAMAGED) and type(exc).__module__.split(".")[0] != "zstandard":
                raise
            raise self._error(f"entry {name!r} cannot be read ({type(exc).__name__}: {clip(exc, 200)})") from None

    def _open(self, info: zipfile.ZipInfo):
        """A reader of the entry's decompressed bytes, and a function saying how many compressed bytes it
        has consumed so far (so that the ratio rule holds at every step, not only against the whole
        entry: a large bomb is stopped as early as a small one)."""
        if info.compress_type == ZSTANDARD:
            source = io.BytesIO(self._payload(info))
            return self._zstandard(source), source.tell
        if info.compress_type == zipfile.ZIP_DEFLATED:
            stream = _Inflating(self._payload(info), info)
            return stream, lambda: stream.consumed
        total = max(min(info.compress_size, self.size), 1)
        return self.archive.open(info), lambda: total

    def _bounded(self, stream, info: zipfile.ZipInfo, consumed) -> bytearray:
        data = bytearray()
        while True:
            chunk = stream.read(CHUNK)
            if not chunk:
                return data
            data += chunk
            self.read_so_far += len(chunk)
            compressed = max(consumed(), 1)
            if self.read_so_far > self.limit:
                raise self._error(
                    f"entry {info.filename!r} takes the archive past {self.limit:,} bytes decompressed "
                    f"(the entry: {compressed:,} bytes compressed so far): a ZIP bomb, or more than "
                    "calibrate reads at once",
                    self.expected + " (CALIBRATE_MAX_DOCUMENT_MB raises the limit)",
                )
            if len(data) > RATIO_FLOOR and len(data) > MAX_RATIO * compressed:
                raise self._error(
                    f"entry {info.filename!r} decompresses to more than {MAX_RATIO:,} times its "
                    f"{compressed:,} compressed bytes: a ZIP bomb",
                    self.expected + " (an archive "
                    "that is no bomb can be read once unpacked: for an Inspect log, inspect log "
                    "convert --to json)",
                )

    def _payload(self, info: zipfile.ZipInfo) -> bytes:
        """An entry's compressed bytes, found through its local header, never read past the end of the
        file (the file is no larger than the limit)."""
        assert self.raw is not None
        self.raw.seek(info.header_offset)
        header = self.raw.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise zipfile.BadZipFile(f"no local header for {info.filename}")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        start = info.header_offset + 30 + name_length + extra_length
        self.raw.seek(start)
        return self.raw.read(max(0, min(info.compress_size, self.size - start)))

    def _zstandard(self, source: io.BytesIO):
        """A reader of a Zstandard entry's decompressed bytes, taking its compressed bytes in small reads."""
        try:
            import zstandard
        except ImportError:
            raise CampaignError(
                [
                    Problem(
                        str(self.path),
                        "an archive compressed with Zstandard, and the zstandard package is not installed",
                        expected="pip install 'calibrate-judges[imports]' (or, for an Inspect log, "
                        "a .json log: inspect log convert --to json)",
                    )
                ]
            ) from None
        # the window a frame may ask for is bounded too (zstandard's default: 128 MiB)
        return zstandard.ZstdDecompressor().stream_reader(source, read_size=16384, read_across_frames=True)


class _Inflating:
    """A Deflate entry decompressed in bounded steps, counting the compressed bytes consumed, its CRC
    checked at the end (as :mod:`zipfile` checks it)."""

    def __init__(self, payload: bytes, info: zipfile.ZipInfo):
        self.payload, self.info = payload, info
        self.decompressor = zlib.decompressobj(-15)
        self.pending = b""
        self.consumed = 0
        self.crc = 0

    def __enter__(self) -> _Inflating:
        return self

    def __exit__(self, *_) -> None:
        pass

    def read(self, size: int) -> bytes:
        while not self.decompressor.eof:
            if not self.pending:
                if self.consumed >= len(self.payload):
                    raise EOFError(f"compressed data of {self.info.filename} ends before its end")
                self.pending = self.payload[self.consumed : self.consumed + 16384]
                self.consumed += len(self.pending)
            out = self.decompressor.decompress(self.pending, size)
            self.pending = self.decompressor.unconsumed_tail
            if out:
                self.crc = zlib.crc32(out, self.crc)
                return out
        if self.crc != self.info.CRC:
            raise zipfile.BadZipFile(f"Bad CRC-32 for file {self.info.filename!r}")
        return b""
