"""Scenario files: one TOML file drives the simulator (and the testbed).

The Rust core owns the format and its checks (`shortflow._core.check_scenario`); this
class holds the text, where it came from and the ``key=value`` overrides, so a scenario can
be changed one knob at a time without rewriting the file.

>>> from shortflow.scenario import Scenario
>>> s = Scenario.from_text('[path]\\nrtt = "100ms"\\n', source="inline.toml")
>>> s.with_overrides("client.stack=rfc2988").overrides
('client.stack=rfc2988',)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from shortflow import _core
from shortflow.exceptions import ScenarioError

#: A scenario is a page of TOML: a larger file is refused before it is read whole (the
#: core refuses larger text too; ``/dev/zero`` must not be read for ever).
MAX_FILE_BYTES = 4 << 20


def _overrides(overrides: Iterable[str] | str) -> tuple[str, ...]:
    """One ``key=value`` given as a plain string is one override, not one per character."""
    if isinstance(overrides, str):
        return (overrides,)
    ov = tuple(overrides)
    for o in ov:
        if not isinstance(o, str):
            raise TypeError(f"an override is a 'key=value' string, not {type(o).__name__}")
    return ov


def _check(text: str, source: str, overrides: tuple[str, ...]) -> str:
    """`_core.check_scenario`, an unknown key explained (`_unknown_key`)."""
    try:
        return _core.check_scenario(text, source, list(overrides))
    except ScenarioError as e:
        raise _unknown_key(e, text, source, overrides) from None


def _unknown_key(e: ScenarioError, text: str, source: str, overrides: tuple[str, ...]) -> ScenarioError:
    """A mistyped key said as the user wrote it: where the typo is (the ``--set`` it came
    in, or the file), and the key it most likely meant from the scenario's key list, in
    place of the model's list of a level's keys (cut short when long)."""
    key = getattr(e, "key", "")
    file = getattr(e, "file", source)
    if not key or not str(e).startswith(f"{file}: {key}: unknown key"):
        return e
    guess = did_you_mean(key)
    # The typo is on --set when the override names the key and the file alone is fine.
    culprit = next((o for o in reversed(overrides) if _names(o, key)), None)
    if culprit is not None:
        try:
            _core.check_scenario(text, source, [])
        except ScenarioError as alone:
            if getattr(alone, "key", None) == key:
                culprit = None
    if culprit is not None:
        written = culprit.partition("=")[0].strip()
        meant = guess + written[len(key):] if guess and written.startswith(key) else guess
        shown = culprit if len(culprit) <= 200 else f"{culprit[:133]}…{culprit[-66:]}"
        where = f"--set {shown}: {key}: unknown key"
    else:
        meant = guess
        where = f"{file}: {key}: unknown key"
    if meant:
        hint = f"; did you mean {meant}?"
    else:
        # No key is close: the level's own keys, whole, when they fit on a line.
        level = key.rpartition(".")[0]
        siblings = _level_keys(level)
        listed = ", ".join(siblings)
        hint = f"; {level or 'the top level'} has {listed}" if siblings and len(listed) < 200 else ""
    err = ScenarioError(f"{where}{hint} (`shortflow scenario keys` lists every key)")
    err.file, err.key = file, key  # type: ignore[attr-defined]
    return err


def _names(override: str, key: str) -> bool:
    """Whether ``key=value`` `override` sets `key`, a key under it, or the table above it."""
    k = override.partition("=")[0].strip()
    return k == key or k.startswith(key + ".") or key.startswith(k + ".")


def _all_keys() -> list[str]:
    """Every dotted key, ``{side}.`` written out as ``client.`` and ``server.``."""
    out = []
    for k in keys():
        name = k["key"]
        out += [name.replace("{side}", side) for side in ("client", "server")] if "{side}" in name else [name]
    return out


def _level_keys(level: str) -> list[str]:
    """The names directly under dotted `level` ("" for the top level)."""
    depth = level.count(".") + 1 if level else 0
    prefix = f"{level}." if level else ""
    return sorted({k.split(".")[depth] for k in _all_keys() if k.startswith(prefix) and k.count(".") >= depth})


def did_you_mean(key: str) -> str | None:
    """The scenario key closest to a mistyped dotted `key`, among the keys of its depth
    (``path.bandwith`` → ``path.bandwidth``, ``clent`` → ``client``), or None.

    >>> did_you_mean("path.bandwith"), did_you_mean("clent"), did_you_mean("zzz.qqq")
    ('path.bandwidth', 'client', None)
    """
    import difflib

    depth = key.count(".")
    known = {".".join(name.split(".")[: depth + 1]) for name in _all_keys() if name.count(".") >= depth}
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.75)
    return close[0] if close else None


@dataclass(frozen=True)
class Scenario:
    """A checked scenario: file text, its name for messages, and overrides."""

    text: str
    source: str
    overrides: tuple[str, ...] = ()
    name: str = ""

    @classmethod
    def from_text(cls, text: str, *, source: str = "<scenario>", overrides: Iterable[str] | str = ()) -> Scenario:
        ov = _overrides(overrides)
        name = _check(text, source, ov)
        return cls(text, source, ov, name)

    @property
    def notes(self) -> list[str]:
        """What the model implied from the keys the file set, as the kernel implies it
        (``server.sack = false`` turns RACK and TLP off), one sentence each."""
        import json

        resolved = json.loads(_core.resolve_scenario(self.text, self.source, list(self.overrides)))
        return list(resolved.get("notes", []))

    @classmethod
    def load(cls, path: str | Path, overrides: Iterable[str] | str = ()) -> Scenario:
        """Reads and checks `path`; raises ScenarioError naming the file and key. A bare name
        that is no file here is a scenario shipped with shortflow (``002-initial-window``), so
        the shipped ones run from any directory."""
        path = Path(path)
        if not path.exists() and path.parent == Path(".") and path.suffix in ("", ".toml"):
            if path.stem in builtin_names():
                return cls.builtin(path.stem, overrides)
        try:
            if path.is_dir():
                raise ScenarioError(f"{path}: is a directory, not a scenario file")
            with path.open("rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES:
                raise ScenarioError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB: not a scenario file")
            text = data.decode()
        except OSError as e:
            known = f" (nor a shipped scenario: {', '.join(builtin_names())})" if path.parent == Path(".") else ""
            raise ScenarioError(f"{path}: cannot read: {e.strerror}{known}") from None
        except UnicodeDecodeError as e:
            raise ScenarioError(f"{path}: byte {e.start}: not UTF-8 text, not a scenario file") from None
        return cls.from_text(text, source=str(path), overrides=overrides)

    @classmethod
    def builtin(cls, name: str, overrides: Iterable[str] | str = ()) -> Scenario:
        """A scenario shipped with shortflow (``shortflow/scenarios/NAME.toml``)."""
        res = resources.files("shortflow") / "scenarios" / f"{name}.toml"
        if not res.is_file():
            raise ScenarioError(f"{name}: no such built-in scenario (known: {', '.join(builtin_names())})")
        return cls.from_text(res.read_text(), source=f"scenarios/{name}.toml", overrides=overrides)

    def with_overrides(self, *overrides: str) -> Scenario:
        """The same scenario with more ``key=value`` overrides (checked now)."""
        ov = self.overrides + _overrides(overrides)
        name = _check(self.text, self.source, ov)
        return replace(self, overrides=ov, name=name)


def builtin_names() -> list[str]:
    """Names of the scenarios shipped with shortflow."""
    folder = resources.files("shortflow") / "scenarios"
    return sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml"))


def resolved(sc: Scenario) -> dict[str, Any]:
    """`sc` as the simulator runs it: every default and stack-profile value filled in, as
    numbers (durations in ns, sizes in bytes, rates in bit/s)."""
    import json

    return json.loads(_core.resolve_scenario(sc.text, sc.source, list(sc.overrides)))  # type: ignore[no-any-return]


def keys() -> list[dict[str, str]]:
    """Every key of a scenario file: key, kind, unit, default, range, help (generated by
    the scenario model, crates/scenario/src/schema.rs)."""
    import json

    return json.loads(_core.scenario_keys())  # type: ignore[no-any-return]


def keys_markdown() -> str:
    """The keys as the Markdown table of docs/scenario.md."""
    return _core.scenario_keys_markdown()


def json_schema() -> str:
    """The JSON Schema of a scenario file (pretty JSON text), as shipped in
    ``shortflow/data/scenario.schema.json``."""
    return _core.scenario_schema()
