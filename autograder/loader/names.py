"""File and folder names, and notes, made safe to show on one line of the results.

A name comes from the student's archive: it can hold newlines (``"x\\nTOTAL 100 / 100"``),
terminal escapes, bidi controls, or bytes that are not UTF-8 (``os.fsdecode`` turns the byte
0xE9 into the lone surrogate ``"\\udce9"``, which strict JSON parsers reject). Everything the
loader puts in ``found`` or ``notes`` goes through here.

    escaped("x\\nTOTAL")  -> 'x\\\\nTOTAL'     one line, valid UTF-8, no quotes added
    shown("hw11.ipynb")   -> 'hw11.ipynb'      a plain name as is, any other escaped and quoted
    quoted(name)          -> '"..."'          always quoted (what a limit cut)
    clean_note(text)      -> the text, valid UTF-8, only newlines and tabs left unescaped
"""
import re

MAX_SHOWN = 160  # characters of a name shown; longer names are cut in the middle

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff\\\\\"]")
_UNSAFE_IN_NOTE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069"
                             "\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", '"': '\\"'}


def _escape(match):
    ch = match.group()
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for a byte that is not UTF-8
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def escaped(name):
    """``name`` on one line: control characters, surrogates, quotes and backslashes escaped."""
    text = _UNSAFE.sub(_escape, str(name))
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN // 2] + "..." + text[-MAX_SHOWN // 2:]


def plain(name):
    return bool(name) and name.isprintable() and not _UNSAFE.search(name) and name.strip() == name


def shown(name):
    """A plain name as it is (``hw11.ipynb``), any other escaped and in double quotes."""
    return name if plain(name) and len(name) <= MAX_SHOWN else quoted(name)


def quoted(name):
    return f'"{escaped(name)}"'


def clean_note(text):
    """A note the loader wrote: valid UTF-8, every control character but newline and tab escaped."""
    text = str(text)
    return text if text.isascii() and text.isprintable() else _UNSAFE_IN_NOTE.sub(_escape, text)


def listing(names, limit=3):
    """``"a", "b", "c" and 4 more`` (each name quoted)."""
    shown_names = ", ".join(quoted(n) for n in names[:limit])
    return shown_names + (f" and {len(names) - limit} more" if len(names) > limit else "")
