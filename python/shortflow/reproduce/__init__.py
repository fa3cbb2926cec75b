"""`shortflow reproduce`: each figure of the source documents beside the simulator's.

Every row names the scenario file it ran (shipped in ``shortflow/scenarios/``) and the
``--set`` overrides, so ``shortflow simulate`` can run it again by hand, and carries one
line explaining a difference when there is one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from shortflow.reproduce.rows import NONE, Row, Why, agrees, row, run_case

__all__ = ["DOCUMENTS", "NONE", "REAL_DOCUMENTS", "SLOW_DOCUMENTS", "Row", "Why", "agrees", "reproduce", "row", "run_case"]


def _registry(quick: bool) -> dict[str, Callable[[], list[Row]]]:
    from shortflow.reproduce import doc000, doc001, doc002, doc003, doc004

    return {"000": doc000.rows, "001": lambda: doc001.rows(quick), "002": doc002.rows, "003": doc003.rows,
            "004": lambda: doc004.rows(quick)}


DOCUMENTS = ("000", "001", "002", "003", "004")
#: Documents whose full run takes minutes (aggregate traffic over several seeds).
SLOW_DOCUMENTS = ("001", "004")
#: Documents whose figures also run on the real kernel with `--real`.
REAL_DOCUMENTS = ("000",)


#: Simulator runs each document makes (full, quick): the count a progress bar shows and
#: its time left comes from (tests/test_front_door.py checks the quick counts).
RUNS = {"000": (48, 48), "001": (65, 26), "002": (8, 8), "003": (12, 12), "004": (202, 50)}


def reproduce(documents: Iterable[str] = DOCUMENTS, *, real: bool = False, quick: bool = False,
              progress: Callable[[int, int, str], None] | None = None) -> list[Row]:
    """All rows for `documents` ("000" to "004"). With `quick`, documents 001 and 004 run
    shortened (60 s / 10 s of traffic, 2 seeds, fewer points) instead of their full sets
    (300 s / 60 s, 5 seeds), which take minutes. With `real`, the rows of
    `REAL_DOCUMENTS` also run on this machine's kernel in the testbed (root; slow: each
    case is a real run with real timeouts). `progress(done, total, text)` is called after
    each simulator run (`RUNS`), then before each real run."""
    from shortflow.simulate import each_run

    reg = _registry(quick)
    docs = list(documents)
    total = sum(RUNS[d][quick] for d in docs)
    rows: list[Row] = []
    done = 0
    for d in docs:
        def ran(d: str = d) -> None:
            nonlocal done
            done += 1
            if progress:
                progress(min(done, total), total, f"document {d}")

        with each_run(ran):
            rows.extend(reg[d]())
    if real:
        from shortflow.reproduce.real import add_real_column

        add_real_column([r for r in rows if r.document in REAL_DOCUMENTS],
                        progress and (lambda i, n, r: progress(i, n, f"real kernel: {r.figure}: {r.case}")))
    return rows
