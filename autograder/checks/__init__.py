"""Stage 3: the graded tests. Trusted code, NumPy only: every verdict is decided here from
raw outputs of the student's own functions, for inputs and weights chosen here, compared with
the reference's. ``collect`` finds the tests of both parts; ``Session`` is a grade's access to
the sandboxes."""
from .base import GradedTest, collect, metadata
from .session import Session

__all__ = ["GradedTest", "Session", "collect", "metadata"]
