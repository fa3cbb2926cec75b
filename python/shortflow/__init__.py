"""shortflow: find and remove the start-up delays of short TCP connections.

>>> import shortflow
>>> callable(shortflow.analyze)
True
"""

from __future__ import annotations

from shortflow.analyze import Analysis, analyze, generate
from shortflow.exceptions import ShortflowError, TraceReadError

__all__ = ["Analysis", "ShortflowError", "TraceReadError", "analyze", "generate"]
__version__ = "0.1.0"
