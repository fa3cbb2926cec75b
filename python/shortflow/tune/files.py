"""Reading the files `tune` is handed (the state file, `--iw-map`): never more than a cap
(one byte past it is read to know the file is longer: /dev/zero or a 400 MB file costs
that, not the host's memory), UTF-8 text, and every refusal a `TuneError` naming the file
and what was wrong with it — its content is never echoed."""

from __future__ import annotations

import os
from pathlib import Path

from shortflow.exceptions import TuneError

#: The state file: a header with the settings (prefixes included) and a dozen steps.
STATE_CAP = 16 << 20
#: A prefix file: about 100,000 prefixes with their settings.
PREFIXES_CAP = 4 << 20


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def read_bytes(path: Path, cap: int, what: str) -> bytes:
    """At most `cap` bytes of `path`; TuneError when it is longer, not a regular file one
    can read to its end (a directory), or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise TuneError(f"{path}: cannot read the {what}: {e.strerror}") from None
    try:
        chunks, got = [], 0
        while got <= cap:
            try:
                chunk = os.read(fd, min(1 << 20, cap + 1 - got))
            except BlockingIOError:
                raise TuneError(f"{path}: the {what} gives no data to read (a pipe or device with nothing in it)") from None
            except OSError as e:
                raise TuneError(f"{path}: cannot read the {what}: {e.strerror}") from None
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    finally:
        os.close(fd)
    if got > cap:
        raise TuneError(f"{path}: the {what} is longer than {_size(cap)}: refused (no {what} is that long)")
    return b"".join(chunks)


def text(data: bytes, path: Path, what: str) -> str:
    """`data` as UTF-8 text; TuneError naming the line and byte where it is not."""
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise TuneError(f"{path}: the {what} is not UTF-8 text (line {line}, byte {e.start})") from None


def read_text(path: Path, cap: int, what: str) -> str:
    return text(read_bytes(path, cap, what), path, what)
