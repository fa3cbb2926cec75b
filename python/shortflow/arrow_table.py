"""The analyzer's connection table as Arrow: the core's column buffers wrapped without a
copy, and the percentiles of its numeric columns.

Kept apart from `shortflow.analyze` so that importing the package (every CLI command)
does not load numpy and pyarrow (~0.13 s); only a command that builds a table does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from shortflow import _core

# Arrays are built over the core's buffers with `from_buffers`: `pa.array` would copy
# them and, on its first call, import pandas (~0.3 s of the CLI's start).


def buffer_array(arr: np.ndarray, arrow_type: pa.DataType, nulls: np.ndarray | None = None) -> pa.Array:
    """An Arrow array over a numpy array's memory; `nulls` marks absent values."""
    validity, null_count = None, 0
    if nulls is not None and nulls.any():
        validity = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
        null_count = int(nulls.sum())
    if arr.dtype == np.bool_:
        data = pa.py_buffer(np.packbits(arr, bitorder="little"))  # Arrow booleans are bits
    else:
        data = pa.py_buffer(np.ascontiguousarray(arr))
    return pa.Array.from_buffers(arrow_type, len(arr), [validity, data], null_count)


def string_array(items: Sequence[str]) -> pa.Array:
    data = [s.encode() for s in items]
    offsets = np.zeros(len(data) + 1, np.int32)
    np.cumsum([len(b) for b in data], out=offsets[1:])
    return pa.StringArray.from_buffers(len(data), pa.py_buffer(offsets), pa.py_buffer(b"".join(data)))


def _strings(offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    n = len(offsets) - 1
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


def _offsets(offsets: np.ndarray) -> pa.Array:
    return buffer_array(offsets.astype(np.int32, copy=False), pa.int32())


def _lists(offsets: np.ndarray, values: np.ndarray) -> pa.Array:
    return pa.ListArray.from_arrays(_offsets(offsets), buffer_array(values, pa.from_numpy_dtype(values.dtype)))


def _codes(codes: np.ndarray) -> pa.Array:
    return buffer_array(codes.astype(np.int8, copy=False), pa.int8())


def _class_lists(offsets: np.ndarray, codes: np.ndarray, names: Sequence[str]) -> pa.Array:
    values = pa.DictionaryArray.from_arrays(_codes(codes), string_array(list(names)))
    return pa.ListArray.from_arrays(_offsets(offsets), values)


#: Dictionary columns and the name list (from the core) their codes index.
_DICTIONARIES = {"vantage": "vantage", "handshake": "handshake", "outcome": "outcome"}


def _column(name: str, arrow_type: str, c: dict[str, Any], d: dict[str, Any], trace_names: pa.Array) -> pa.Array:
    if name == "trace":
        return pa.DictionaryArray.from_arrays(buffer_array(c["trace"].astype(np.int32, copy=False), pa.int32()), trace_names)
    if name in ("client_ip", "server_ip", "syn_ladder"):
        return _strings(*c[name])
    if name.endswith("_gap_class"):
        offsets, codes = c[name]
        return _class_lists(offsets, codes, d["gap_class"])
    if name.endswith("_gaps_s") or name.startswith("lost_offsets_"):
        return _lists(*c[name])
    if name in _DICTIONARIES:
        return pa.DictionaryArray.from_arrays(_codes(c[name]), string_array(list(d[_DICTIONARIES[name]])))
    arr = c[name]
    if arrow_type.startswith("timestamp"):
        return buffer_array(arr.astype(np.int64, copy=False), pa.timestamp("ns"))
    if arr.dtype == np.bool_:
        return buffer_array(arr, pa.bool_())
    # Absent values are NaN in the core; in the table they are nulls.
    return buffer_array(arr, pa.from_numpy_dtype(arr.dtype), np.isnan(arr) if arr.dtype.kind == "f" else None)


def table(raw: dict[str, Any], paths: Sequence[str]) -> pa.Table:
    """The connection table of one `_core.analyze` result over the traces `paths`, its
    columns as the core's schema names and documents them."""
    # Analysed without the table: none of its rows, all of its columns.
    c = raw["columns"] if raw["columns"] is not None else _core.empty_columns()
    d = raw["dictionaries"]
    trace_names = string_array([str(p) for p in paths])
    arrays = []
    fields = []
    for name, arrow_type, unit, doc in _core.table_schema():
        arr = _column(name, arrow_type, c, d, trace_names)
        arrays.append(arr)
        meta = {"doc": doc}
        if unit:
            meta["unit"] = unit
        fields.append(pa.field(name, arr.type, metadata=meta))
    # Rows come in order of first appearance, file by file (the core sorts them).
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def exchanges(raw: dict[str, Any], paths: Sequence[str]) -> pa.Table:
    """The exchanges table of one `_core.analyze` result over the traces `paths`: one row
    per request and response of each connection, its columns as the core's
    `exchange_schema` names and documents them."""
    c = raw.get("exchange_columns")
    if c is None:
        c = _core.empty_exchange_columns()
    trace_names = string_array([str(p) for p in paths])
    arrays, fields = [], []
    for name, arrow_type, unit, doc in _core.exchange_schema():
        arr = _column(name, arrow_type, c, {}, trace_names)
        arrays.append(arr)
        meta = {"doc": doc, **({"unit": unit} if unit else {})}
        fields.append(pa.field(name, arr.type, metadata=meta))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _present_values(col: pa.ChunkedArray) -> np.ndarray:
    """A numeric column's non-null values as floats, read from its buffers (`to_numpy`
    on a column with nulls imports pandas: ~0.3 s of the CLI's start)."""
    if not (pa.types.is_floating(col.type) or pa.types.is_integer(col.type)):
        values: np.ndarray = col.to_numpy(zero_copy_only=False).astype(float)
        return values
    dtype = np.dtype(col.type.to_pandas_dtype())
    parts = []
    for chunk in col.chunks:
        n, off = len(chunk), chunk.offset
        validity, data = chunk.buffers()[:2]
        values = np.frombuffer(data, dtype)[off:off + n] if n else np.empty(0, dtype)
        if chunk.null_count and validity is not None:
            present = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[off:off + n].astype(bool)
            values = values[present]
        parts.append(values.astype(float))
    return np.concatenate(parts) if parts else np.empty(0)


def floats(col: pa.ChunkedArray) -> np.ndarray:
    """A numeric column's every row as a float, nulls as NaN, read from its buffers (as
    `_present_values`, so that pandas is not imported)."""
    dtype = np.dtype(col.type.to_pandas_dtype())
    parts = []
    for chunk in col.chunks:
        n, off = len(chunk), chunk.offset
        validity, data = chunk.buffers()[:2]
        values = (np.frombuffer(data, dtype)[off:off + n] if n else np.empty(0, dtype)).astype(float)
        if chunk.null_count and validity is not None:
            present = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[off:off + n].astype(bool)
            values[~present] = np.nan
        parts.append(values)
    return np.concatenate(parts) if parts else np.empty(0)


def percentiles(table: pa.Table, columns: Sequence[str]) -> dict[str, dict[str, float | None]]:
    """p50/p90/p99 (and the count of values) of each column over the connections that have one."""
    return {name: percentile_summary(_present_values(table.column(name))) for name in columns
            if name in table.column_names}


def percentile_summary(values: np.ndarray) -> dict[str, float | None]:
    """p50/p90/p99 and the count of the finite ones of `values`."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return {"n": 0, "p50": None, "p90": None, "p99": None}
    p50, p90, p99 = np.percentile(v, [50, 90, 99])
    return {"n": int(v.size), "p50": float(p50), "p90": float(p90), "p99": float(p99)}
