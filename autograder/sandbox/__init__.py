"""Stage 2: student code runs here, in a separate, unprivileged, limited process."""
from .runner import GraderError, Sandbox, StudentError

__all__ = ["Sandbox", "StudentError", "GraderError"]
