"""Text the grader writes is clean: valid UTF-8 for strict JSON parsers, and no character that
moves the cursor, ends a line or reorders text, except the newlines and tabs a message means.

Anything a submission controls (exception messages, printed output, file and folder names)
can hold a lone surrogate (``"\\ud800"`` in an exception message; ``os.fsdecode`` turns a byte
that is not UTF-8 into ``"\\udcXX"``), terminal escapes or line separators. ``clean_text``
makes such text safe to store and show; ``quote`` makes it safe inside one line of a summary;
``clean`` applies ``clean_text`` to every string (keys included) of a JSON-like value.
"""
import math
import re

# C0 controls but tab and newline, DEL, C1 controls, line/paragraph separators, bidi controls,
# and surrogates (a str holds them only unpaired: each is shown as its own escape).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069"
                     "\ud800-\udfff]")
_IN_QUOTES = re.compile('[\\\\"\t\n]')
_QUOTED = {"\\": "\\\\", '"': '\\"', "\t": "\\t", "\n": "\\n"}


def _escape(match):
    ch = match.group()
    code = ord(ch)
    if ch == "\r":
        return "\\r"
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for the byte code - 0xDC00
        return f"\\x{code - 0xDC00:02x}"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def clean_text(text):
    """``text`` with every unsafe character written as a visible escape (``\\x1b``, ``\\ud800``,
    ``\\u202e``); tabs and newlines stay, ``\\r\\n`` becomes ``\\n``. Non-strings are ``str()``-ed."""
    if not isinstance(text, str):
        text = _as_text(text)
    if text.isascii() and text.isprintable():
        return text
    return _UNSAFE.sub(_escape, text.replace("\r\n", "\n"))


def _as_text(value):
    if value is None:
        return ""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "surrogateescape")
    try:
        return str(value)
    except Exception as e:  # noqa: BLE001 - a value whose __str__ fails still becomes text
        return f"<{type(value).__name__}: str() failed: {type(e).__name__}>"


def quote(text):
    """``text`` in double quotes on one line: backslash, quote, tab and newline escaped too,
    so a name holding ``"\\nTOTAL 100 / 100"`` cannot start a line of its own."""
    if not isinstance(text, str):
        text = _as_text(text)
    return '"' + clean_text(_IN_QUOTES.sub(lambda m: _QUOTED[m.group()], text)) + '"'


def one_line(text):
    """``text`` cleaned, with its newlines and tabs escaped too (quotes and backslashes kept):
    a CSV cell, a progress line."""
    return clean_text(text).replace("\n", "\\n").replace("\t", "\\t")


def clean(value, *, finite=0.0):
    """A copy of the JSON-like ``value`` that strict JSON accepts: strings (keys too) cleaned,
    tuples made lists, NaN and infinities replaced by ``finite``, other objects by their
    ``item()`` (NumPy scalars) or their text."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else finite
    if isinstance(value, dict):
        return {clean_text(k): clean(v, finite=finite) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v, finite=finite) for v in value]
    item = getattr(value, "item", None)
    if callable(item):
        try:
            scalar = item()
        except Exception:  # noqa: BLE001 - an array of several values: its text
            scalar = None
        if isinstance(scalar, (bool, int, float, str)):
            return clean(scalar, finite=finite)
    return clean_text(value)
