"""Native core of shortflow (Rust, PyO3). Conversion only: the work is in the crates."""

from collections.abc import Callable, Sequence
from os import PathLike
from typing import Any, final

class ShortflowError(Exception):
    """Base of every shortflow error."""

class TraceReadError(ShortflowError):
    """A capture file could not be read (names the file and byte offset)."""

class FilterError(ShortflowError):
    """A filter expression libpcap does not accept (its own message), or libpcap is missing."""

class CaptureError(ShortflowError):
    """A live interface could not be opened or read (names the interface; says which
    capability is missing)."""

class ScenarioError(ShortflowError):
    """A scenario file is invalid; the message names the file and the key."""

class SimulationLimitError(ShortflowError):
    """A run reached its memory or event budget; the message says what to change."""

class UnitError(ShortflowError, ValueError):
    """A duration, size or rate that could not be read; the message names the option or key."""

    quantity: str
    """``duration``, ``size`` or ``rate``."""
    text: str
    """The value as written (cut when long)."""

DEFAULT_IDLE_TIMEOUT_S: float
"""A connection with no packet for this long is ended as idle (seconds)."""
DEFAULT_CLOSE_LINGER_S: float
"""After both FINs or a RST, late packets still belong to the connection this long (s)."""

#: The time account's causes, in the core's order: the table's ``time_<cause>_s`` columns
#: and the summary's ``time_lost_s`` keys.
CAUSES: list[str]
#: (capture point, in words): where a trace was captured, as the command line says it.
VANTAGE_WORDS: list[tuple[str, str]]
#: (cause, the cause in words), as the command line's time account and the report name it.
CAUSE_WORDS: list[tuple[str, str]]
#: (cause, its label on a time-sequence graph's gap); the path's own time has none.
CAUSE_LABELS: list[tuple[str, str]]
#: The causes a user waits through (all but idle and teardown, reported apart).
WAITED_CAUSES: list[str]
#: The waited causes but the path's own time: what a connection lost (the worst are ranked by it).
LOST_CAUSES: list[str]
#: The connection table's columns the summary's percentiles are taken over.
PERCENTILE_COLUMNS: list[str]

def document_fields() -> dict[str, list[tuple[str, str, str]]]:
    """The summary document's sections (``summary``, ``file``, ``table1``, ``synack``,
    ``rtt_ratio``, ``vantage_counts``), each as its fields (key, unit, meaning) in order, as
    declared once in Rust."""

def table_schema() -> list[tuple[str, str, str, str]]:
    """The connection table's columns, as defined once in Rust: (name, Arrow type, unit,
    meaning), in order."""

def empty_columns() -> dict[str, Any]:
    """The table's columns without rows (numpy arrays), as `analyze`'s ``columns`` would
    be: for an analysis made with ``table=False``, whose ``columns`` is None."""

def exchange_schema() -> list[tuple[str, str, str, str]]:
    """The exchanges table's columns (one row per request and response of a connection),
    as defined once in Rust: (name, Arrow type, unit, meaning), in order."""

def empty_exchange_columns() -> dict[str, Any]:
    """The exchanges table's columns without rows (numpy arrays)."""

def abt_parse(text: str) -> list[dict[str, Any]]:
    """The connection vectors of a tmix text (ns-2's format: SEQ/CONC, w, r, l, >, <, t,
    c>, c<, t>, t< lines); each a dict with ``start_us``, ``id``, ``window``,
    ``min_rtt_us``, ``loss`` and ``epochs`` (request, response_delay_us, response,
    interval_us) or ``concurrent`` (the initiator's and acceptor's (bytes, wait_us)).
    A ValueError names the line at fault."""

def abt_format(vectors: list[dict[str, Any]]) -> str:
    """tmix's text of `vectors` (dicts as `abt_parse` returns them)."""

def advise_scenario(m: dict[str, Any]) -> str:
    """The TOML scenario of one connection model (``conn_id``, ``rtt_s``, ``lost_syns``,
    ``lost_synacks``, ``epochs``, ``lost_c2s``, ``lost_s2c``, ``server_iw``,
    ``observed_s``): what `shortflow simulate` replays."""

def advise_shared(groups: list[list[tuple[float, dict[str, Any]]]], fixes: list[dict[str, Any]],
                  threads: int) -> list[tuple[str | None,
                                              list[list[tuple[bool, float | None, float | None, float, bool]]]]]:
    """Groups of connections that overlapped on one path, each a list of (start_s, model),
    replayed alone and together without their losses, unchanged and under each fix: per
    group (None, per fix per member (the group's replay unchanged holds it, seconds saved
    alone, saved together, lost to the neighbours, made slower together)), or (the error,
    []) when its scenario does not load."""

def advise_faithful(batch: list[dict[str, Any]], threads: int) -> list[tuple[int, tuple[float | None, int, int]]]:
    """The faithful models of a batch (indices) with their baseline outcomes, as
    `AdviseRanking.replay_batch` finds them, without replaying any fix."""

@final
class AdviseRanking:
    """The fixes' accounts over a capture's connections, fed in batches: `replay_batch`
    per batch of models, then `pairs` and `replay_pairs` over the faithful ones, then
    `finish`. Per-connection savings spill to files in ``spill_dir`` (None: memory)."""

    def __new__(cls, vantage: str, spill_dir: str | PathLike[str] | None = None) -> AdviseRanking: ...
    def replay_batch(self, batch: list[dict[str, Any]], threads: int) -> dict[str, Any]:
        """Replays the models unchanged and under every single fix: ``baseline`` (a dict
        per model: ``conn_id``, ``observed_s``, ``replay_s``, ``faithful``, ``reason``),
        ``faithful`` ((index, (duration_s, extra_packets, spurious)) per faithful model)
        and ``saved_s`` (per fix in `fixes()` order, seconds saved per faithful model)."""
    def fixes(self) -> list[dict[str, Any]]:
        """The fixes accounted so far: ``fix``, ``apply``, ``scenario_overrides``."""
    def pairs(self) -> list[dict[str, Any]]:
        """After every batch: the pairs of the best three single fixes, added."""
    def replay_pairs(self, batch: list[dict[str, Any]], outcomes: list[tuple[float | None, int, int]],
                     threads: int) -> list[list[float]]:
        """Replays faithful models (with their baseline outcomes) under the pairs."""
    def add_pairs(self, pairs: list[dict[str, Any]]) -> None:
        """Adds accounts for pairs another ranking's `pairs()` chose."""
    def singles(self) -> int:
        """The number of single fixes (the pairs' accounts follow them)."""
    def take_parts(self, first: int) -> tuple[list[dict[str, Any]], list[int]]:
        """The accounts from the `first`-th on as parts (``helped``, ``slower``, ``extra``,
        ``spurious``, ``total``, ``saved``), emptied, and (connections, faithful, replays)
        counted so far, zeroed: for another ranking's `absorb`."""
    def absorb(self, first: int, parts: list[dict[str, Any]], counts: list[int]) -> None:
        """Adds another ranking's parts to the accounts from the `first`-th on, and its counts."""
    def replays(self) -> int:
        """Connection replays run so far."""
    def finish(self) -> list[dict[str, Any]]:
        """The fixes best first, with their estimates, intervals (``*_ci``) and harm."""

@final
class ConnectionStream:
    """The ended connections of captures, batch by batch, read on a thread of its own."""

    def __new__(cls, paths: Sequence[str | PathLike[str]], *, rows: int = 4096, idle_timeout_s: float | None = None,
                close_linger_s: float | None = None, filter: str | None = None) -> ConnectionStream: ...
    def next_batch(self) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The next batch as (columns, exchange_columns), as `analyze`'s; None at the end."""
    def finish(self) -> dict[str, Any]:
        """After the last batch: `analyze`'s answer without its tables (``summary``,
        ``dictionaries``, ``files``)."""

def table_dictionaries() -> dict[str, list[str]]:
    """The names the table's dictionary columns' codes index: ``vantage``, ``outcome``,
    ``handshake``, ``gap_class``."""

@final
class Watcher:
    """A live analysis of one interface: packets from the kernel's ring (libpcap) into the
    analyzer's tracker; the rows of connections as they end."""

    def __new__(cls, interface: str, *, snaplen: int = 256, promiscuous: bool = False,
                buffer_bytes: int = 67108864, filter: str | None = None, idle_timeout_s: float | None = None,
                close_linger_s: float | None = None, max_connections: int = 200_000,
                pcap: str | PathLike[str] | None = None) -> Watcher:
        """Opens the interface; raises `CaptureError` (no such interface, no CAP_NET_RAW,
        no libpcap) or `CaptureError` with libpcap's message for a filter it refuses. With
        `pcap`, every packet read is kept there as it was read (nanosecond timestamps)."""
    def run_for(self, seconds: float) -> None:
        """Reads packets for about ``seconds`` (the GIL released)."""
    def take_ended(self) -> dict[str, Any]:
        """The columns (as `analyze`'s ``columns``) of the connections ended since the last call."""
    def stats(self) -> dict[str, Any]:
        """Packets read and skipped, the kernel's received / ring drops / interface drops,
        connections evicted, ended and open."""
    def finish(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        """Ends the open connections; returns (columns, summary, stats)."""

def check_filter(text: str) -> None:
    """Raises `FilterError` with libpcap's message when it does not accept ``text`` (or
    cannot be loaded); reads nothing."""

def connection_packets(path: PathLike[str], ids: list[int], *, filter: str | None = None,
                       idle_timeout_s: float | None = None, close_linger_s: float | None = None,
                       from_s: float | None = None, to_s: float | None = None, max_packets: int | None = None) -> tuple[
        dict[str, list[Any]], dict[int, tuple[tuple[str, int], tuple[str, int]]], dict[int, tuple[int, bool]], str | None]:
    """The packets a graph draws of the connections ``ids`` (the table's ``conn_id``) of one
    trace, with the analyzer's event (new data, retransmission class), the cause of the gap
    before each and whether it is a duplicate ACK; ``from_s``/``to_s`` zoom (after each
    connection's first packet, which stays, as do its SYNs), and a connection with more than
    ``max_packets`` (default 10,000) is thinned to the first, last, lowest and highest of
    each kind of mark in each of 1,000 time columns. Also each connection's ((client ip,
    port), (server ip, port)); its (packets in the zoom, thinned); and the error (file and
    byte offset) that stopped the reading before the file's end, or None. A file that cannot
    be read as a trace at all raises `TraceReadError`."""

def analyze(
    paths: Sequence[str | PathLike[str]],
    *,
    idle_timeout_s: float | None = None,
    close_linger_s: float | None = None,
    workers: int = 1,
    table: bool = True,
    worst: int | None = None,
    progress: Callable[[int, int, int], object] | None = None,
    filter: str | None = None,
) -> dict[str, Any]:
    """Analyze captures: ``{"columns", "worst_columns", "summary", "dictionaries", "files",
    "interrupted"}``; ``columns`` is None with ``table=False`` (no numpy array is made, so
    numpy is not imported). With ``table=False`` and ``worst`` set, a digest is kept instead
    of the table: ``worst_columns`` holds the rows of the ``worst`` connections that lost the
    most time (in table order), and each file ``percentile_values`` (column name to array).

    Runs with the GIL released; ``progress(done_bytes, total_bytes, packets)`` is called every
    100 ms; Ctrl-C stops reading and keeps what was read.
    """

def merge_summaries(states: Sequence[str]) -> dict[str, Any]:
    """The summary of files analysed apart: the ``summary_state`` of each file of
    `analyze`'s ``files``, added up by the core; the same keys as `analyze`'s ``summary``."""

def generate(
    path: str | PathLike[str],
    *,
    connections: int = 1000,
    seed: int = 1,
    arrivals_per_s: float = 2000.0,
    rtt_min_s: float = 0.01,
    rtt_max_s: float = 0.2,
    syn_loss: float = 0.01,
    synack_loss: float = 0.005,
    ack_loss: float = 0.0,
    client_rto_s: float = 1.0,
    server_rto_s: float = 1.0,
    syn_retries: int = 5,
    synack_retries: int = 5,
    vantage: str = "client",
    ipv6: bool = False,
    response_segments_max: int = 20,
    link: str = "ethernet",
    vlan: int | None = None,
    format: str = "pcap",
    nanosecond: bool = True,
    big_endian: bool = False,
    snaplen: int = 65535,
    gzip: bool = False,
) -> dict[str, int]:
    """Write a synthetic capture of interleaved short flows, run through the simulator
    (Poisson arrivals, each connection's RTT uniform in [rtt_min_s, rtt_max_s], SYNs, SYN/ACKs
    and client pure ACKs lost with their own probabilities); returns the ground truth the
    simulator counted at its capture point."""

def check_scenario(scenario_text: str, source_name: str, overrides: Sequence[str] = ...) -> str:
    """Check a scenario (with ``key=value`` overrides); returns its name or raises ScenarioError."""

def resolve_scenario(scenario_text: str, source_name: str, overrides: Sequence[str] = ...) -> str:
    """The resolved scenario (defaults filled in; ns, bytes, bit/s) as JSON text, or raises ScenarioError."""

def stack_profiles() -> str:
    """The named stack profiles as JSON text: {name: {"source": citation, "config": StackConfig}}."""

def kernel_knobs() -> str:
    """The knobs shortflow sets on a running kernel and Linux's timer constants, as JSON text: {"knobs", "constants"}."""

def scenario_keys() -> str:
    """Every key of the scenario file as JSON text: [{"key", "kind", "unit", "default", "range", "help"}]."""

def scenario_keys_markdown() -> str:
    """The keys as the Markdown table of docs/scenario.md."""

def scenario_schema() -> str:
    """The JSON Schema of a scenario file, as pretty JSON text."""

def report_fields() -> list[tuple[str, str, str, str]]:
    """The keys of a connection's report (``simulate``'s ``connections``), as declared once
    in Rust: (key, unit, Rust type, meaning), in order."""

#: The flows table's columns: (name, the report's key it is taken from, Arrow type).
FLOW_COLUMNS: list[tuple[str, str, str]]

def simulate(
    scenario_text: str,
    source_name: str,
    overrides: Sequence[str] = ...,
    *,
    pcap: str | PathLike[str] | None = None,
    timeline: bool = False,
    max_memory: int = 0,
    max_events: int = 0,
    rate: float | None = None,
    totals_only: bool = False,
) -> str:
    """Run a scenario with the GIL released; returns the report as JSON text.

    With ``pcap``, writes what the scenario's capture point saw (nanosecond pcap).
    ``max_memory`` (bytes) and ``max_events`` bound the run (0: no bound); beyond them
    it raises SimulationLimitError saying what to change.
    """

def duration_ns(text: str, what: str | None = None) -> int:
    """Nanoseconds in a duration with its unit (`200ms`, `1e2ms`, `1.5s`); ValueError otherwise."""

def size_bytes(text: str, what: str | None = None) -> int:
    """Bytes in a size with its unit (`35kB`, `1MiB`); whole bytes, at most 2^53."""

def rate_bps(text: str, what: str | None = None) -> int:
    """Bits per second in a rate with its unit (`10Mbit`, `10Mbps`, tc's `10mbit`)."""

#: The TCP header's flag bits, as the wire crate defines them: (name, bit).
TCP_FLAGS: list[tuple[str, int]]

def segments(path: str | PathLike[str]) -> dict[str, Any]:
    """Every TCP segment of a capture in file order, as numpy columns `ts_ns`, `src_port`,
    `dst_port`, `flags`, `seq`, `ack`, `payload_len` (read by the analyzer's readers)."""

def run_netem(argv: Sequence[str]) -> int:
    """Runs the link emulator's command line in this process until it stops (`argv[0]` is
    the program name); returns its exit status."""

def bpf_object(name: str) -> bytes | None:
    """The BPF object `name` (`tune`) compiled when the extension was built; None if it was not."""

def bpf_struct_layout(object: bytes, name: str) -> list[tuple[str, int, int]]:
    """The members of `struct NAME` in the object's BTF: (name, byte offset, size); OSError if absent."""

def bpf_load_pinned(object: bytes, program: str, pin_dir: str) -> int:
    """Loads sock_ops `program` of `object`, pins it (`prog`) and its maps (by name) in `pin_dir`; its id."""

def bpf_attach_pinned(cgroup: str, pin_dir: str) -> None:
    """Attaches the program pinned in `pin_dir` to `cgroup` through a link pinned at `pin_dir/link`."""

def bpf_detach_links(cgroup: str, prog: int) -> int:
    """Detaches every cgroup link of program `prog` on `cgroup`; how many there were."""

def bpf_detach_attached(cgroup: str, prog: int) -> bool:
    """Detaches program `prog` from `cgroup` where it is attached without a link; whether it was."""

def bpf_program(id: int) -> dict[str, Any] | None:
    """Program `id` as {"id", "name", "tag", "map_ids"}; None when there is none."""

def bpf_pinned_program(path: str) -> dict[str, Any]:
    """The program pinned at `path` as {"id", "name", "tag", "map_ids"}; OSError if none."""

def bpf_map_name(id: int) -> str | None:
    """The name of map `id`; None when there is none."""

def bpf_map_entries(path: str) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of the map pinned at `path` (a per-CPU map's values one after another, 8-byte slots)."""

def bpf_map_value_layout(path: str) -> list[tuple[str, int, int]]:
    """The layout of the value of the map pinned at `path`, from the map's own BTF: (name, offset, size)."""

def bpf_map_update(path: str, key: bytes, value: bytes) -> None:
    """Sets `key` of the map pinned at `path` to `value`."""

def bpf_map_delete(path: str, key: bytes) -> bool:
    """Deletes `key` from the map pinned at `path`; False when it held no such key."""

def bpf_map_update_struct(path: str, key: bytes, fields: list[tuple[str, int]]) -> None:
    """Sets `key` of the map pinned at `path` to the struct whose members are `fields`, laid out as the map's own BTF says."""

def bpf_sock_ops_tree(root: str) -> list[tuple[str, list[int]]]:
    """Every cgroup under `root` with sock_ops programs attached to it, and their ids."""

@final
class BpfLink:
    """A cgroup link only this process holds: `close()`, or the process ending, detaches it."""

    @property
    def attached(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> BpfLink: ...
    def __exit__(self, _t: object, _v: object, _tb: object) -> None: ...

def bpf_attach_held(cgroup: str, prog_pin: str) -> BpfLink:
    """Attaches the program pinned at `prog_pin` to `cgroup` through a link only this process holds."""
