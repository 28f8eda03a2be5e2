"""Stage 4: the result model and the one writer of Gradescope's results.json.

``to_gradescope_dict`` builds the document, ``summary`` its top-level output, ``reserve`` holds
the results file's space before student code runs and ``write_reserved`` fills it at the end;
``crash_document`` is what a grade that crashed writes. Every string is cleaned on the way.
"""
from .clean import clean, clean_text, quote
from .gradescope import CRASH_MESSAGE, crash_document, encode, to_gradescope_dict, write_atomic
from .model import TestResult, from_runner_json
from .store import ResultsFile, reserve, write_reserved
from .summary import summary

__all__ = ["TestResult", "from_runner_json", "to_gradescope_dict", "crash_document", "write_atomic",
           "reserve", "write_reserved", "ResultsFile", "summary", "encode", "clean",
           "clean_text", "quote", "CRASH_MESSAGE"]
