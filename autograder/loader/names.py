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
from ..results.clean import _UNSAFE as _UNSAFE_IN_NOTE
from ..results.clean import _escape, quote

MAX_SHOWN = 160  # characters of a name shown; longer names are cut in the middle


def escaped(name):
    """``name`` on one line: control characters, surrogates, quotes and backslashes escaped."""
    text = quote(str(name))[1:-1]  # results/clean.py's escaping, without its quotes
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN // 2] + "..." + text[-MAX_SHOWN // 2:]


def plain(name):
    return (bool(name) and name.isprintable() and not _UNSAFE_IN_NOTE.search(name) and "\\" not in name
            and '"' not in name and name.strip() == name)


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
