"""Locale tags and the fallback chain a template lookup walks (``es-MX`` → ``es`` → default)."""

from __future__ import annotations

import re

# BCP 47-ish: a 2-3 letter language, then script/region/variant subtags; ``_`` is accepted.
_TAG = re.compile(r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8}){0,3}", re.ASCII)


def normalize(tag: str) -> str | None:
    """Return ``tag`` in canonical case (``es-MX``, ``zh-Hant-TW``), or None if malformed."""
    tag = tag.strip()
    if not _TAG.fullmatch(tag):
        return None
    language, *rest = re.split(r"[-_]", tag)
    subtags = [language.lower()]
    for subtag in rest:
        if len(subtag) == 2 and subtag.isalpha():
            subtags.append(subtag.upper())  # region
        elif len(subtag) == 4 and subtag.isalpha():
            subtags.append(subtag.title())  # script
        else:
            subtags.append(subtag.lower())
    return "-".join(subtags)


def fallback_chain(tag: str, default: str) -> tuple[str, ...]:
    """The locales to try for ``tag``, most specific first, ending with ``default``.

    A malformed tag falls back to the default alone, so it can never name a path.
    """
    canonical = normalize(tag)
    chain: list[str] = []
    if canonical is not None:
        subtags = canonical.split("-")
        chain = ["-".join(subtags[:n]) for n in range(len(subtags), 0, -1)]
    if default not in chain:
        chain.append(default)
    return tuple(chain)
