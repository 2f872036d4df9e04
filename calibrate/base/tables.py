"""CSV tables read column-wise: :func:`read_csv_table`.

A ratings file of a million rows read row by row in Python (:func:`~calibrate.base.documents.read_csv_rows`,
which keeps each row's physical line) costs seconds before any check. Most files are plain: no field
quoted, so no field spans lines and each row is one line. Those are parsed by pyarrow's CSV reader into
text columns, and row ``i`` is on line ``i + 2``. Any other file (a quote anywhere, a NUL byte, a repeated
column, a row of the wrong width) is read by the row reader, whose problems name the file and the line:
both ways give the same table.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd

from calibrate.base.documents import csv_text_rows, read_text

__all__ = ["read_csv_table"]


def read_csv_table(path: str | Path, *, expected: str, max_bytes: int | None = None) -> pd.DataFrame:
    """A CSV file as text columns, with a ``line`` column: the physical line each row starts on.

    Rows whose fields are all empty are skipped, as :func:`~calibrate.base.documents.read_csv_rows`
    skips them; every value is text exactly as written (no value becomes missing).

    Parameters
    ----------
    path : str or Path
    expected : str
        What the file should hold, for the problems (an empty file, text that is not UTF-8).
    max_bytes : int, optional
        The size limit (:func:`~calibrate.base.documents.max_document_bytes` by default).

    Returns
    -------
    pandas.DataFrame
        One text column per header name, and ``line``.

    Raises
    ------
    DocumentError
        As :func:`~calibrate.base.documents.read_csv_rows` raises it.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "a.csv"
    >>> _ = path.write_text("case_id,value\\nc1,1\\n,\\nc2,\\n")
    >>> read_csv_table(path, expected="a table").to_dict("list")
    {'case_id': ['c1', 'c2'], 'value': ['1', ''], 'line': [2, 4]}
    """
    text = read_text(path, expected=expected, max_bytes=max_bytes)
    table = _plain_table(text)
    if table is None:  # quoted fields, or something the row reader names a problem of
        header, rows = csv_text_rows(text, source=str(path), expected=expected)  # the text read once
        table = pd.DataFrame([record for _, record in rows], columns=header, dtype=object)
        table["line"] = np.array([line for line, _ in rows], dtype=np.int64)
    return table


def _plain_table(text: str) -> pd.DataFrame | None:
    """The table of a file with no quote and no NUL, parsed by pyarrow; None for any other file, or
    one pyarrow cannot read (a row of the wrong width), which the row reader then reads."""
    if '"' in text or "\0" in text or not text.strip("\r\n"):
        return None
    header = next(csv.reader(io.StringIO(text, newline="")), None)
    if not header or len(set(header)) != len(header):
        return None
    import pyarrow as pa  # the CSV reader: imported by the commands that read a table only
    import pyarrow.csv as pa_csv

    try:
        parsed = pa_csv.read_csv(
            io.BytesIO(text.encode("utf-8")),
            read_options=pa_csv.ReadOptions(column_names=header, skip_rows=1, use_threads=False),
            parse_options=pa_csv.ParseOptions(
                quote_char=False,
                double_quote=False,
                escape_char=False,
                newlines_in_values=False,
                ignore_empty_lines=False,
            ),
            convert_options=pa_csv.ConvertOptions(
                column_types={name: pa.string() for name in header},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid:
        return None
    table = parsed.to_pandas()
    # with no quote, each row is one physical line (a blank line is a row of empty fields here)
    table["line"] = np.arange(len(table), dtype=np.int64) + 2
    filled = np.zeros(len(table), dtype=bool)
    for name in header:
        filled |= (table[name] != "").to_numpy()
    return table[filled].reset_index(drop=True) if not filled.all() else table
