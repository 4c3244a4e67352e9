"""The call-numbered store in content/: durable filing, dedup, recovery, checking.

``core`` holds the ``Store`` class; ``index`` is its SQLite index and ``layout`` says
where files live in content/. This package never parses sources and never prints.
"""

from .core import Outcome, Pipeline, Prepared, Store

__all__ = ["Outcome", "Pipeline", "Prepared", "Store"]
