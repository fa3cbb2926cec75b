"""Connection rows written as they come into Parquet files that rotate: one file per
`every` seconds, named by the UTC time it was opened, closed whole before the next."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


class RotatingParquet:
    def __init__(self, out_dir: Path, every_s: float, metadata: dict[str, str]) -> None:
        self.out_dir = out_dir
        self.every_s = every_s
        self.metadata = metadata
        self._writer: pq.ParquetWriter | None = None
        self._opened = 0.0
        self.written: list[Path] = []
        self.rows = 0

    def _open(self, schema: pa.Schema) -> None:
        self._opened = time.time()
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self._opened))
        path = self.out_dir / f"connections-{stamp}.parquet"
        n = 1
        while path.exists() or path in self.written:  # two rotations within one second
            path = self.out_dir / f"connections-{stamp}-{n}.parquet"
            n += 1
        schema = schema.with_metadata({**(schema.metadata or {}), **{k.encode(): v.encode() for k, v in self.metadata.items()}})
        self._writer = pq.ParquetWriter(path, schema)
        self.written.append(path)

    def write(self, rows: pa.Table) -> None:
        if self._writer is not None and time.time() - self._opened >= self.every_s:
            self.close()
        if rows.num_rows == 0:
            return
        if self._writer is None:
            self._open(rows.schema)
        assert self._writer is not None
        self._writer.write_table(rows.replace_schema_metadata(self._writer.schema.metadata))
        self.rows += rows.num_rows

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
