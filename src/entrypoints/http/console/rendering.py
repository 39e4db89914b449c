"""How console pages are rendered: one Jinja2 environment (autoescaped) and its filters."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import jinja2
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.response import Template
from litestar.template.config import TemplateConfig

from outbox.entrypoints.http.console.guard import SignedIn

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"


def when(value: datetime | None) -> str:
    """A time in UTC to the second; a dash for none."""
    if value is None:
        return "—"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def age(value: timedelta | None) -> str:
    """A duration in its largest two units; "none" for no duration."""
    if value is None:
        return "none"
    seconds = int(value.total_seconds())
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def short(value: UUID | str) -> str:
    """An id's last twelve characters: enough to tell rows apart (the link has it whole)."""
    text = str(value)
    return "…" + text[-12:]


def template_config() -> TemplateConfig[JinjaTemplateEngine]:
    """The admin app's template configuration: the console's templates, autoescaped."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters.update(when=when, age=age, short=short)
    return TemplateConfig(instance=JinjaTemplateEngine.from_environment(environment))


def form_key() -> str:
    """A new form's idempotency key: a retry of the same form sends it again."""
    return secrets.token_urlsafe(18)


def page(
    name: str,
    caller: SignedIn | None,
    *,
    status: int = 200,
    section: str = "",
    title: str = "",
    notice: str | None = None,
    error: str | None = None,
    **context: Any,
) -> Template:
    """A console page; signed-in pages get the navigation and the session's CSRF token."""
    return Template(
        template_name=name,
        status_code=status,
        context={
            "nav": caller is not None,
            "csrf": caller.session.csrf if caller is not None else context.pop("csrf", ""),
            "section": section,
            "title": title or section,
            "notice": notice,
            "error": error,
            **context,
        },
    )
