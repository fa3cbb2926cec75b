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


@dataclass(frozen=True)
class Scenario:
    """A checked scenario: file text, its name for messages, and overrides."""

    text: str
    source: str
    overrides: tuple[str, ...] = ()
    name: str = ""

    @classmethod
    def from_text(cls, text: str, *, source: str = "<scenario>", overrides: Iterable[str] = ()) -> Scenario:
        ov = tuple(overrides)
        name = _core.check_scenario(text, source, list(ov))
        return cls(text, source, ov, name)

    @classmethod
    def load(cls, path: str | Path, overrides: Iterable[str] = ()) -> Scenario:
        """Reads and checks `path`; raises ScenarioError naming the file and key."""
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as e:
            raise ScenarioError(f"{path}: cannot read: {e.strerror}") from None
        except UnicodeDecodeError:
            raise ScenarioError(f"{path}: not a text file") from None
        return cls.from_text(text, source=str(path), overrides=overrides)

    @classmethod
    def builtin(cls, name: str, overrides: Iterable[str] = ()) -> Scenario:
        """A scenario shipped with shortflow (``shortflow/scenarios/NAME.toml``)."""
        res = resources.files("shortflow") / "scenarios" / f"{name}.toml"
        if not res.is_file():
            raise ScenarioError(f"{name}: no such built-in scenario (known: {', '.join(builtin_names())})")
        return cls.from_text(res.read_text(), source=f"scenarios/{name}.toml", overrides=overrides)

    def with_overrides(self, *overrides: str) -> Scenario:
        """The same scenario with more ``key=value`` overrides (checked now)."""
        ov = self.overrides + tuple(overrides)
        name = _core.check_scenario(self.text, self.source, list(ov))
        return replace(self, overrides=ov, name=name)


def builtin_names() -> list[str]:
    """Names of the scenarios shipped with shortflow."""
    folder = resources.files("shortflow") / "scenarios"
    return sorted(p.name[: -len(".toml")] for p in folder.iterdir() if p.name.endswith(".toml"))
