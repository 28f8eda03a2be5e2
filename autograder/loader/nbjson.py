"""A notebook's code cells from its JSON bytes, without building the rest of the document.

Runs in the loader's limited child (see ``child.py``): standard library only, no package
imports. ``json.loads`` would build every value of the file, and a 48 MB notebook whose cell
metadata holds 16 million empty objects needs over a gigabyte that way. Here only the skeleton
is parsed (top-level keys, the cells, each cell's keys); a code cell's ``source`` is kept as a
byte span, and every other value (metadata, outputs, attachments) is skipped by a scanner
whose regular expressions swallow runs of flat values in one step: time and memory are linear
in the file's bytes, and no object is built for a skipped value.

    read_cells(data) -> (cells, notes)  # cells: [(index, cell_type, (start, end) or None)]
    source_of(data, span) -> the cell's source text

Skipped values are checked for balanced brackets and well-formed strings and numbers, not for
the place of every comma. nbformat 4 notebooks (``cells``) and nbformat 3 ones (``worksheets``,
code in ``input``) are read.
"""
import json
import re

MAX_CELLS = 10_000       # cells read; the rest are skipped (a note says so)
MAX_KEY_BYTES = 256      # a longer key is no key we look for

_WS = re.compile(rb"[ \t\n\r]*")
_CHARS = rb'[^"\\\x00-\x1f]*'
_ESC = rb'\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})'
_STRING = rb'"' + _CHARS + rb"(?:" + _ESC + _CHARS + rb'){0,8}"'  # more escapes: _long_string
_NUMBER = rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_SCALAR = rb"(?:" + _STRING + rb"|" + _NUMBER + rb"|true|false|null)"
# The regular expressions cannot blow up: items need exactly one ',' or ':' between them (two
# adjacent numbers could split a long digit string in exponentially many ways), no two unbounded
# whitespace runs are ever next to each other (a quadratic split), and every repetition of a
# group is bounded, because the regex engine keeps each iteration's state until the match ends
# (at most 256 x 16 x 9 iterations, ~8 MB, here).
_GAP = rb"[ \t\n\r]*"
_SEP1 = _GAP + rb"[,:]" + _GAP
_FLAT = rb"[\[{]" + _GAP + rb"(?:" + _SCALAR + rb"(?:" + _SEP1 + _SCALAR + rb"){0,15}" + _GAP + rb")?[\]}]"
_ITEM = rb"(?:" + _FLAT + rb"|" + _SCALAR + rb")"  # depth-neutral: a scalar or a flat container
_RUN = _ITEM + rb"(?:" + _SEP1 + _ITEM + rb"){0,255}"
# One step of the skipper: a run of depth-neutral values | of openers | of closers | a long string.
_SKIP = re.compile(rb"[ \t\n\r,:]*(?:(" + _RUN + rb")|([\[{]{1,4096})|([\]}]{1,4096})|(\"))")
_TO_CLOSER = bytes.maketrans(b"[{", b"]}")
_SCALAR_RE = re.compile(_SCALAR)
_LONG_HEAD = re.compile(rb'"' + _CHARS)
_LONG_MORE = re.compile(rb"(?:" + _ESC + _CHARS + rb"){1,1024}")
_CLOSER = {ord("["): ord("]"), ord("{"): ord("}")}


class NotJSON(ValueError):
    """The bytes are not JSON (cut off, another format, or not UTF-8)."""


class NotNotebook(ValueError):
    """JSON, but not shaped like a Jupyter notebook."""


class _Reader:
    def __init__(self, data):
        self.data = data

    # -- tokens ---------------------------------------------------------------------------
    def ws(self, pos):
        return _WS.match(self.data, pos).end()

    def at(self, pos):
        return self.data[pos:pos + 1]

    def expect(self, pos, char):
        if self.at(pos) != char:
            got = repr(self.at(pos).decode("latin-1")) if self.at(pos) else "the end of the file"
            raise NotJSON(f"expected {char.decode()!r} at byte {pos}, got {got}")
        return pos + 1

    def string_end(self, pos):
        if self.at(pos) != b'"':
            raise NotJSON(f"expected a string at byte {pos}")
        m = _SCALAR_RE.match(self.data, pos)
        return m.end() if m else self._long_string(pos)

    def _long_string(self, pos):
        """A string with many escapes, a chunk of escapes at a time."""
        pos = _LONG_HEAD.match(self.data, pos).end()
        while self.at(pos) == b"\\":
            m = _LONG_MORE.match(self.data, pos)
            if m is None:
                raise NotJSON(f"a bad escape in a string at byte {pos}")
            pos = m.end()
        if self.at(pos) != b'"':
            raise NotJSON(f"a string is not closed (byte {pos})")
        return pos + 1

    def skip(self, pos):
        """The end of the value starting at ``pos``; nothing is built."""
        first = self.at(pos)
        if first == b'"':
            return self.string_end(pos)
        if first in (b"[", b"{"):
            return self.skip_inside(pos + 1, _CLOSER[first[0]])
        m = _SCALAR_RE.match(self.data, pos)
        if m is None:
            raise NotJSON(f"unexpected {first!r} at byte {pos}" if first else "the file ends too early")
        return m.end()

    def skip_inside(self, pos, closer):
        """The end of the container whose contents start at ``pos`` and which ``closer`` ends."""
        stack = bytearray([closer])  # one byte a level: deep nesting stays cheap
        data, match = self.data, _SKIP.match
        while stack:
            m = match(data, pos)
            if m is None:
                raise NotJSON(f"unexpected data at byte {pos}" if pos < len(data) else "the file ends too early")
            pos = m.end()
            kind = m.lastindex
            if kind == 2:
                stack += m.group(2).translate(_TO_CLOSER)
            elif kind == 3:  # closers: as many as the open containers, the rest is the caller's
                closers = m.group(3)
                k = min(len(closers), len(stack))
                if stack[len(stack) - k:] != closers[k - 1::-1]:
                    raise NotJSON(f"a bracket does not match near byte {m.start(3)}")
                del stack[len(stack) - k:]
                pos = m.start(3) + k
            elif kind == 4:
                pos = self._long_string(pos - 1)
        return pos

    # -- containers -----------------------------------------------------------------------
    def members(self, pos, member):
        """The object at ``pos``: ``member(key or None, value_pos) -> value_end`` for each member.
        Returns the object's end."""
        if self.at(pos) != b"{":
            raise NotNotebook("an object was expected") if self.at(pos) else NotJSON("the file ends too early")
        pos = self.ws(pos + 1)
        if self.at(pos) == b"}":
            return pos + 1
        while True:
            end = self.string_end(pos)
            key = json.loads(self.data[pos:end]) if end - pos <= MAX_KEY_BYTES else None
            pos = self.ws(self.expect(self.ws(end), b":"))
            pos = self.ws(member(key, pos))
            if self.at(pos) == b"}":
                return pos + 1
            pos = self.ws(self.expect(pos, b","))

    def items(self, pos, item, limit):
        """The array at ``pos``: ``item(value_pos) -> value_end`` for the first ``limit`` items,
        the rest skipped. Returns (end, whether items were skipped)."""
        if self.at(pos) != b"[":
            raise NotNotebook("a list was expected") if self.at(pos) else NotJSON("the file ends too early")
        pos = self.ws(pos + 1)
        if self.at(pos) == b"]":
            return pos + 1, False
        for _ in range(limit):
            pos = self.ws(item(pos))
            if self.at(pos) == b"]":
                return pos + 1, False
            pos = self.ws(self.expect(pos, b","))
        return self.skip_inside(pos, ord("]")), True


def _cell(reader, pos, cells):
    found = {}

    def member(key, at):
        end = reader.skip(at)
        if key in ("cell_type", "source", "input"):
            found[key] = (at, end)
        return end

    end = reader.members(pos, member)
    kind = found.get("cell_type")
    kind = json.loads(reader.data[kind[0]:kind[1]]) if kind and kind[1] - kind[0] <= MAX_KEY_BYTES else None
    cells.append((len(cells) + 1, kind if isinstance(kind, str) else None,
                  found.get("source") or found.get("input") if kind == "code" else None))
    return end


def read_cells(data):
    """(cells, notes) of the notebook ``data`` (bytes); raises NotJSON or NotNotebook.
    cells: [(number from 1, cell_type or None, byte span of a code cell's source or None)]."""
    reader = _Reader(data)
    cells, notes, lists = [], [], []
    pos = reader.ws(3 if data.startswith(b"\xef\xbb\xbf") else 0)
    if reader.at(pos) != b"{":
        raise NotJSON("it does not start with '{'" if data.strip() else "it is empty")

    def cell_list(at):
        lists.append(at)
        end, cut = reader.items(at, lambda p: _cell(reader, p, cells), MAX_CELLS - len(cells))
        if cut:
            notes.append(f"the notebook has more than {MAX_CELLS} cells; only the first {MAX_CELLS} were read")
        return end

    def worksheet(at):
        return reader.members(at, lambda key, p: cell_list(p) if key == "cells" else reader.skip(p))

    def top(key, at):
        if key == "cells":
            return cell_list(at)
        if key == "worksheets":
            lists.append(at)
            return reader.items(at, worksheet, 1000)[0]
        return reader.skip(at)

    try:
        end = reader.members(pos, top)
    except NotNotebook as e:
        raise NotNotebook(f"its 'cells' are not a list of cells ({e})") from None
    if reader.ws(end) != len(data):
        raise NotJSON(f"there is more data after the notebook ends (byte {end})")
    if not lists:
        raise NotNotebook("it has no 'cells'")
    return cells, notes


def source_of(data, span):
    """A code cell's source (a string, or a list of strings as nbformat writes it); raises
    NotNotebook when it is neither."""
    value = json.loads(data[span[0]:span[1]])
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "".join(value)
    raise NotNotebook("its source is not text")
