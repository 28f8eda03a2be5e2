"""The loader's limited child: reads a notebook on stdin, writes its definitions on stdout.

    python -I -S -B child.py MEMORY_BYTES CPU_SECONDS [CELL_TO_SKIP ...] < notebook.ipynb

Started by ``reader.py``, never by hand. Standard library only (``-S``: no site-packages), so
it starts in milliseconds with about 10 MB. Before it reads a byte of the notebook it limits
its own address space, CPU time and file writes: whatever the notebook does to the JSON reader
or to Python's parser, it does it to this process.

Output, one line each: ``>N`` before code cell N is parsed (so the parent knows which cell a
crash happened in), then ``=`` and the JSON result: ``{"source": ..., "notes": [...]}``, or
``{"unreadable": why}`` when the file is not a notebook.
"""
import json
import os
import resource
import sys

MAX_BYTES = 64 * 2**20  # more than the loader's notebook limit; the parent checked the size


def _limit(memory, cpu_seconds):
    """Hard limits, set before a byte of the notebook is read. The child keeps its user (root on
    Gradescope): the sandbox's users (``nobody`` among them) run student code, which could
    signal or trace a loader child of their own uid, in a regrade another student's."""
    for which, value in ((resource.RLIMIT_AS, memory), (resource.RLIMIT_CPU, cpu_seconds),
                         (resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(which, (value, value + (which == resource.RLIMIT_CPU)))


def _write(line):
    sys.stdout.buffer.write(line.encode("ascii") + b"\n")
    sys.stdout.buffer.flush()


def main(argv):
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
    import nbjson
    import notebook
    _limit(int(argv[1]), int(argv[2]))
    skip = {int(a) for a in argv[3:]}
    data = sys.stdin.buffer.read(MAX_BYTES)
    try:
        cells, notes = nbjson.read_cells(data)
    except nbjson.NotJSON as e:
        _write("=" + json.dumps({"unreadable": "json", "detail": str(e)}))
        return
    except nbjson.NotNotebook as e:
        _write("=" + json.dumps({"unreadable": "notebook", "detail": str(e)}))
        return
    except MemoryError:
        _write("=" + json.dumps({"unreadable": "memory", "detail": "MemoryError"}))
        return
    code = [(index, (lambda span=span: nbjson.source_of(data, span)))
            for index, kind, span in cells if kind == "code" and span and index not in skip]
    source, more = notebook.definitions(code, on_cell=lambda index: _write(f">{index}"))
    _write("=" + json.dumps({"source": source, "notes": notes + more}))


if __name__ == "__main__":
    main(sys.argv)
