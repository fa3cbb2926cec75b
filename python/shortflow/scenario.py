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
        name = _core.check_scenario(text, source, list(ov))
        return cls(text, source, ov, name)

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
        name = _core.check_scenario(self.text, self.source, list(ov))
        return replace(self, overrides=ov, name=name)


def builtin_names() -> list[str]:
    """Names of the scenarios shipped with shortflow."""
    folder = resources.files("shortflow") / "scenarios"
    return sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml"))
