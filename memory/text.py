"""Text as it is shown: data, never instructions to the terminal; URLs without passwords.

Light on purpose (no pydantic, no numpy): the dashboard shows text with these before its
first frame, and every printed line passes through them.
"""

from __future__ import annotations

import re
from pathlib import Path


def counts_text(passed: int | None, failed: int | None) -> str:
    """'3 passed, 1 failed', or what is unknown where the test runner's output did not say."""
    if passed is None and failed is None:
        return "counts unknown"
    return ", ".join(
        f"{count} {kind}" if count is not None else f"{kind} unknown"
        for count, kind in ((passed, "passed"), (failed, "failed"))
    )


# Each C0 control (bar \t and \n), DEL and each C1 control becomes one visible character, so
# the text keeps its length (Rich spans stay put): ESC shows as ␛, DEL as ␡, C1 as �. So do
# the invisible format characters (Unicode's Cf, and the line and paragraph separators):
# bidi overrides that show a line in another order than it reads, zero-width spaces and
# joiners, and the tag characters that spell hidden ASCII.
_VISIBLE = {code: 0x2400 + code for code in range(0x20) if chr(code) not in "\t\n"}
_VISIBLE |= {0x7F: 0x2421} | {code: 0xFFFD for code in range(0x80, 0xA0)}
_INVISIBLE = (
    (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F),
    (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x2028, 0x202E),
    (0x2060, 0x2064), (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD),
    (0x110CD, 0x110CD), (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip
_VISIBLE |= {code: 0xFFFD for first, last in _INVISIBLE for code in range(first, last + 1)}


def shown(text: str) -> str:
    """`text` safe to put on a terminal: a record, a model's answer or a server's message
    cannot clear the screen, conceal the next line (ESC[8m), set the clipboard (OSC 52) or
    plant a link (OSC 8), and no hidden character can reorder or hide what a line says.
    Newlines and tabs stay; lone surrogates become U+FFFD."""
    text = text.translate(_VISIBLE)
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


# Rich's markup reads `[` then a letter, `#`, `/` or `@` and on to the next `]` as a tag, and
# its renderer turns every other backslash-bracket into a bare bracket. rich.markup.escape
# guards only the first: data `\[` came out as `[`, and data ending in backslashes escaped
# the tag after it.
_MARKUP_TAG = re.compile(r"(\\*)(\[[a-z#/@][^[]*?])")
_BACKSLASHES_BEFORE_OTHER_BRACKET = re.compile(r"(\\+)(?=\[(?![a-z#/@][^[]*?]))")
_TRAILING_BACKSLASHES = re.compile(r"\\+$")


def as_markup(text: str) -> str:
    """`text` as Rich markup that reads as `text` itself inside a tag: Rich's escape, plus a
    backslash before a bracket that opens no tag, and trailing backslashes doubled so the
    tag after them stays a tag (data printed bare goes as text, not through this)."""
    text = _BACKSLASHES_BEFORE_OTHER_BRACKET.sub(lambda m: m[1] + "\\", text)
    text = _MARKUP_TAG.sub(lambda m: f"{m[1]}{m[1]}\\{m[2]}", text)
    return _TRAILING_BACKSLASHES.sub(lambda m: m[0] * 2, text)


# A terminal's colour and cursor codes (CSI: ESC [ ... final) and its commands (OSC: ESC ] ...
# BEL or ST), as a project that forces `--color=yes` writes them into its test output.
_TERMINAL_CODES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")


def without_terminal_codes(text: str) -> str:
    """`text` without ANSI colour, cursor and OSC sequences: the words a reader sees."""
    return _TERMINAL_CODES.sub("", text) if "\x1b" in text else text


# scheme://user:PASSWORD@host — the password runs to the last "@" of the word, since one may
# itself hold "@", "/" or ":" (redis://:p@ss/w0rd@host).
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s:@/]*:)\S*@")


def mask_url_passwords(text: str) -> str:
    """`text` with the password of every URL in it replaced by ***: what a memory URL or a
    base URL may carry is never printed or written."""
    return _URL_PASSWORD.sub(r"\1***@", text)


def short_url(url: str, width: int) -> str:
    """A memory URL for a title line: its password masked, the home folder as `~`, and cut
    in the middle with "…" to `width` characters (its scheme and file name stay)."""
    url = mask_url_passwords(shown(url))
    home = str(Path.home())
    if home != "/" and f"/{home}/" in url:
        url = url.replace(f"/{home}/", "/~/", 1)
    if len(url) <= width:
        return url
    tail = max(width // 2, 1)
    return url[: max(width - 1 - tail, 0)] + "…" + url[-tail:]
