"""Stage 4: the result model and the one writer of Gradescope's results.json."""
from .gradescope import crash_document, to_gradescope_dict, write_atomic, write_fallback
from .model import TestResult, from_runner_json

__all__ = ["TestResult", "from_runner_json", "to_gradescope_dict", "crash_document", "write_atomic",
           "write_fallback"]
