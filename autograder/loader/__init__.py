"""Stage 1: find what the student submitted and stage it for the sandbox.

No student code runs here: files are found, read and copied. A submission is a folder holding
``attention.py`` and/or ``gpt.py`` anywhere inside it (the shallowest of each name wins), a
single ``.py`` file, or a single ``.ipynb`` notebook with both parts' definitions.

Loading is untrusted work too: the walk and the copy are bounded (``files.py``), a notebook is
parsed only in a limited child process (``reader.py`` -> ``child.py``: ``nbjson.py`` reads the
cells, ``notebook.py`` keeps the definitions), and names are escaped (``names.py``).
"""
from .find import PARTS, Submission, load

__all__ = ["PARTS", "Submission", "load"]
