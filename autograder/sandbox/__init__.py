"""Stage 2: student code runs here, in a separate, unprivileged, limited process."""
from .runner import GraderError, Sandbox, StudentError, preflight

__all__ = ["Sandbox", "StudentError", "GraderError", "preflight"]
