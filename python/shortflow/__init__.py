"""shortflow: find and remove the start-up delays of short TCP connections.

>>> import shortflow
>>> callable(shortflow.analyze)
True
"""

from __future__ import annotations

from shortflow.analyze import Analysis, analyze, generate
from shortflow.exceptions import FilterError, ScenarioError, ShortflowError, TraceReadError
from shortflow.scenario import Scenario
from shortflow.simulate import SimulationResult, simulate
from shortflow.sweeps import sweep

__all__ = [
    "Analysis",
    "FilterError",
    "Scenario",
    "ScenarioError",
    "ShortflowError",
    "SimulationResult",
    "TraceReadError",
    "analyze",
    "generate",
    "simulate",
    "sweep",
]
__version__ = "0.1.0"
