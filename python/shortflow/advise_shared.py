"""Which of a capture's connections shared a bottleneck, and what a larger initial window
on their server does to each one's neighbours (`_core.advise_shared`: the simulator's
shared dumbbell).

A group is *known* when the capture says three things of it: its connections overlapped
in time (each one's span, its first packet to its last response byte, meets the next's;
chains of overlaps make one group; one trace's connections: two traces' clocks need not be
one), they crossed one path (one client and one server:
the same access links at both ends, wherever the bottleneck is), and that path's rate was
measured (an ACK clock, `advise._Counts.bottleneck`). Connections of other clients that
overlapped at the same server are counted but not replayed together: a server's
connections share its own link, but whether that link or each client's own was the
bottleneck the capture does not say.

Groups of more than `GROUP_MAX` connections replay in windows of that many consecutive
starts (the neighbours across a window's edge are not each other's), and at most
`SHARED_MAX` connections are replayed together in all (the first groups in the capture's
order): the spans are kept for every connection (24 bytes each), the models only for the
grouped ones.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shortflow import _core

#: Connections one shared replay holds at most.
GROUP_MAX = 64
#: Connections replayed together in all at most.
SHARED_MAX = 20_000

#: What the shared replay cannot show, said beside its figures.
CAVEAT = ("overlapping connections of one path (one client, one server) whose bottleneck rate the ACK clock "
          "measured replay together on the shared dumbbell, without their losses; connections of other clients "
          "that overlapped at the same server are not replayed together (whether they shared a bottleneck, "
          "the capture does not say)")


#: A group's member: when the capture first saw it (s), its model, and its row's keys
#: (``trace``, ``conn_id``).
Member = tuple[float, dict[str, Any], dict[str, Any]]


def _on_the_path(group: list[Member], vantage: str) -> list[Member]:
    """The group with every member's round trip its path's least (one client, one server,
    one propagation delay: a handshake's round trip near the server includes the queue
    the neighbours had filled, which the shared replay's own queue adds again), and its
    start when its client sent its first SYN: when the capture saw it near the client,
    half that round trip before near the server."""
    least = min(m["rtt_s"] for _, m, _ in group)
    early = least / 2 if vantage == "server" else 0.0
    return [(seen - early, {**m, "rtt_s": least}, row) for seen, m, row in group]


def _fixes_with_neighbours(fixes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fixes whose effect reaches a connection's neighbours: those that change the
    server's initial window (its first flights fill the shared queue)."""
    return [f for f in fixes if any(o.startswith("server.initial_window=") for o in f["scenario_overrides"])]


@dataclass
class Spans:
    """Every connection's span at the capture point, by its path and its server: the first
    pass keeps these (`add`), `groups` finds the overlaps."""

    #: Per trace and path (client, server): starts and ends (s) and model indices.
    _paths: dict[tuple[str, str, str], tuple[array[float], array[float], array[int]]] = field(default_factory=dict)
    #: Connections seen (the next model index).
    count: int = 0

    def add(self, i: int, f: dict[str, Any]) -> None:
        self.count = max(self.count, i + 1)
        if f["last_end"] is None or f["first_seen"] is None:
            return
        start = f["first_seen"] / 1e9
        starts, ends, ids = self._paths.setdefault((f["trace"], f["client_ip"], f["server_ip"]),
                                                   (array("d"), array("d"), array("q")))
        starts.append(start)
        ends.append(start + f["last_end"])
        ids.append(i)

    def merge(self, other: Spans) -> None:
        """Adds another trace's spans after this one's connections (its indices shifted by
        this one's count): one capture of both, as a local run reads them."""
        for path, (starts, ends, ids) in other._paths.items():
            mine = self._paths.setdefault(path, (array("d"), array("d"), array("q")))
            mine[0].extend(starts)
            mine[1].extend(ends)
            mine[2].extend(i + self.count for i in ids)
        self.count += other.count

    def groups(self, rated: Callable[[tuple[str, str]], bool]) -> Groups:
        """The known groups (paths for which `rated` says the rate was measured), and the
        connections that overlapped others at their server but in no known group."""
        import numpy as np

        out, left = Groups(), set[int]()
        by_server: dict[str, list[tuple[Any, Any, Any]]] = {}
        for path, (starts, ends, ids) in self._paths.items():
            spans = (np.frombuffer(starts), np.frombuffer(ends), np.frombuffer(ids, dtype=np.int64))
            by_server.setdefault(path[0] + "\0" + path[2], []).append(spans)
            if not rated(path[1:]):
                continue
            for component in _overlaps(*spans):
                for k in range(0, len(component), GROUP_MAX):
                    window = [int(i) for i in component[k:k + GROUP_MAX]]
                    if len(window) >= 2 and out.grouped + len(window) <= SHARED_MAX:
                        out.add(window)
                    elif len(window) >= 2:
                        left.update(window)
        out.left_out = len(left)
        for parts in by_server.values():
            together = [np.concatenate([p[k] for p in parts]) for k in range(3)]
            out.unknown += sum(1 for c in _overlaps(*together) for i in c.tolist() if i not in out.of and i not in left)
        return out


def _overlaps(starts: Any, ends: Any, ids: Any) -> list[Any]:
    """The chains of overlapping spans of two or more (each one's indices, by start): a
    span that starts before every earlier one has ended joins their chain."""
    import numpy as np

    order = np.argsort(starts, kind="stable")
    starts, ends, ids = starts[order], ends[order], ids[order]
    reach = np.maximum.accumulate(ends)
    breaks = np.flatnonzero(starts[1:] >= reach[:-1]) + 1
    return [c for c in np.split(ids, breaks) if len(c) >= 2]


@dataclass
class Groups:
    """The known groups: each connection's group (`of`, by model index), the members'
    models as the second pass makes them (`keep`), and the counts said in the output."""

    of: dict[int, int] = field(default_factory=dict)
    sizes: list[int] = field(default_factory=list)
    #: Connections in known groups left out past `SHARED_MAX`.
    left_out: int = 0
    #: Connections that overlapped others at their server in no known group.
    unknown: int = 0
    #: Members the group's replay holds (the shared figures' connections).
    held: int = 0
    #: Whether the groups were replayed (some fix changes the server's flights).
    replayed: bool = False
    #: Connection replays run: each member alone and together, unchanged and per fix.
    replays: int = 0
    #: Groups whose scenario did not load, by the reason.
    errors: Counter[str] = field(default_factory=Counter)
    #: Per group, its members.
    members: dict[int, list[Member]] = field(default_factory=dict)

    @property
    def grouped(self) -> int:
        return len(self.of)

    def document(self) -> dict[str, Any]:
        """The JSON's ``shared``: the groups replayed together and what was not."""
        return {"groups": len(self.sizes), "connections": self.grouped, "replayed": self.replayed,
                "faithful": self.held,
                "left_out": self.left_out, "not_known": self.unknown,
                "not_loaded": sum(self.errors.values()), "not_loaded_reasons": dict(self.errors)}

    def add(self, ids: list[int]) -> None:
        g = len(self.sizes)
        self.sizes.append(len(ids))
        for i in ids:
            self.of[i] = g

    def part(self, first: int, count: int) -> Groups:
        """The groups of the connections `first` to `first + count` (one trace's), indexed
        from 0: what a cluster's worker keeps the models of."""
        return Groups(of={i - first: g for i, g in self.of.items() if first <= i < first + count})

    def absorb(self, other: Groups) -> None:
        """Another part's members (`part`), after those kept so far."""
        for g, members in other.members.items():
            self.members.setdefault(g, []).extend(members)

    def keep(self, f: dict[str, Any], model: dict[str, Any]) -> None:
        """A grouped connection's model as the second pass made it, with when the capture
        saw its first packet."""
        g = self.of.get(model["conn_id"])
        if g is None:
            return
        least = f["rtt_min_s"] if f["rtt_min_s"] is not None and not math.isnan(f["rtt_min_s"]) else model["rtt_s"]
        self.members.setdefault(g, []).append((f["first_seen"] / 1e9, {**model, "rtt_s": min(least, model["rtt_s"])},
                                               {"trace": f["trace"], "conn_id": f["conn_id"]}))

    def replay(self, fixes: list[dict[str, Any]], vantage: str, threads: int,
               rows: Callable[[list[dict[str, Any]]], None] | None = None) -> dict[str, dict[str, Any]]:
        """Each fix that reaches the neighbours replayed on every group: per fix name, over
        the groups' held members, ``connections``, ``saved_s_lone`` and
        ``saved_s_shared`` (seconds the fix saves them alone and together),
        ``neighbours_s`` (seconds their neighbours cost them) and ``slower`` (made slower
        together but not alone). A group whose scenario did not load is counted in
        ``errors`` with its reason. `rows`, if given, gets each group's rows: per fix and
        held member, its figures (``--out``'s ``shared.parquet``)."""
        chosen = _fixes_with_neighbours(fixes)
        groups = [_on_the_path(g, vantage) for g in self.members.values() if len(g) >= 2]
        out: dict[str, dict[str, Any]] = {f["fix"]: {"connections": 0, "saved_s_lone": 0.0, "saved_s_shared": 0.0,
                                                     "neighbours_s": 0.0, "slower": 0} for f in chosen}
        if not chosen or not groups:
            return out
        self.replayed = True
        self.replays += sum(2 * len(g) * (1 + len(chosen)) for g in groups)
        found = _core.advise_shared([[(s, m) for s, m, _ in g] for g in groups], chosen, threads)
        for k, (g, (err, per_fix)) in enumerate(zip(groups, found)):
            if err is not None:
                self.errors[err] += 1
                continue
            self.held += sum(1 for e in per_fix[0] if e[0])
            written: list[dict[str, Any]] = []
            for f, effects in zip(chosen, per_fix):
                acc = out[f["fix"]]
                for (_, _, row), (together, lone, shared, neighbours, slower) in zip(g, effects):
                    # Only where the group's replay holds the connection: a lone replay
                    # that holds it says nothing of how its neighbours' replays meet it.
                    if not together:
                        continue
                    written.append({"fix": f["fix"], **row, "group": k, "saved_s_alone": lone,
                                    "saved_s_together": shared, "neighbours_s": neighbours})
                    acc["connections"] += 1
                    acc["saved_s_lone"] += lone or 0.0
                    acc["saved_s_shared"] += shared or 0.0
                    acc["neighbours_s"] += neighbours
                    # Slower together only: the lone replay's verdict is the ranking's own.
                    acc["slower"] += int(slower and (lone is None or lone >= -0.001))
            if rows is not None:
                rows(written)
        return out
