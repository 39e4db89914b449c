"""What an SMTP server said, kept for operators: the enhanced status code (RFC 3463) and the
reply text with every address and anything that could be a secret taken out."""

from __future__ import annotations

import re
from collections.abc import Iterable

from outbox.domain.delivery.failures import MAX_DETAIL

_ENHANCED = re.compile(r"[245]\.\d{1,3}\.\d{1,3}", re.ASCII)
# In order: whatever a server puts in angle brackets (addresses, message ids), anything with
# an @, URLs (they may carry tokens), IP addresses, long letter-and-digit strings (tokens,
# queue ids), runs of four or more digits (codes, phone numbers, ids).
_SCRUB = (
    (re.compile(r"<[^>]*>?"), "[address]"),
    (re.compile(r"\S*@\S*"), "[address]"),
    (re.compile(r"\b[a-z][a-z0-9+.-]*://\S*", re.IGNORECASE), "[url]"),
    (re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b"), "[ip]"),
    (re.compile(r"\b[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}\b", re.IGNORECASE), "[ip]"),
    (re.compile(r"\b(?=\w*\d)(?=\w*[a-z])[\w-]{12,}", re.IGNORECASE), "[token]"),
    (re.compile(r"\+?\d[\d ()-]{2,}\d"), "[number]"),
)
_UNPRINTABLE = re.compile(r"[^\x20-\x7e]+")
_SPACES = re.compile(r"\s+")


def reply_detail(reply: str, *, destination: str) -> str:
    """``reply`` (the text after the reply code, lines joined by newlines) as one safe line:
    the enhanced status code first, then the scrubbed text, at most MAX_DETAIL characters.

    The destination and its local part are removed even where they stand alone.
    """
    lines = [line.strip() for line in reply.splitlines()]
    first = lines[0].split(" ", 1)[0] if lines else ""
    enhanced = first if _ENHANCED.fullmatch(first) else ""
    # A multi-line reply repeats the enhanced code on every line.
    text = " ".join(_without_prefix(line, enhanced) for line in lines)
    local_part = destination.rpartition("@")[0]
    scrubbed = _scrubbed(text, known=(destination, local_part) if local_part else (destination,))
    return f"{enhanced} {scrubbed}".strip()[:MAX_DETAIL]


def _without_prefix(line: str, enhanced: str) -> str:
    if enhanced and (line == enhanced or line.startswith(enhanced + " ")):
        return line[len(enhanced) :].strip()
    return line


def _scrubbed(text: str, *, known: Iterable[str]) -> str:
    text = _UNPRINTABLE.sub(" ", text)
    for value in sorted(known, key=len, reverse=True):
        if len(value) >= 3:
            text = re.sub(re.escape(value), "[address]", text, flags=re.IGNORECASE)
    for pattern, replacement in _SCRUB:
        text = pattern.sub(replacement, text)
    return _SPACES.sub(" ", text).strip()
