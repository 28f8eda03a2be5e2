"""Stage 3: the graded tests. Trusted code, NumPy only: every verdict is decided here from
raw outputs that the sandbox returned. ``collect`` finds the tests of both parts."""
from .base import GradedTest, collect, test_metadata
from .context import GradingContext

__all__ = ["GradedTest", "GradingContext", "collect", "test_metadata"]
