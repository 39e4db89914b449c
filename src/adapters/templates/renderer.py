"""The Jinja2 renderer: sandboxed, strict, autoescaped HTML, compiled once.

Templates live in ``<locale>/<template>.<channel>.<part>`` under the built-in directory
and, taking precedence file by file, under an operator's override directory. Parts are
``subject`` and ``html`` (email only) and ``text`` (every channel, always required).
HTML files (and ``layout.html``, which they extend) are autoescaped; other parts are not.

Each part is looked up along the locale fallback chain (``es-MX`` → ``es`` → the default
locale); at every locale an override file wins over a built-in one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path

import attrs
import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from outbox.adapters.templates.locales import fallback_chain
from outbox.application.delivery.errors import TemplateNotFound, TemplateRenderFailed
from outbox.application.delivery.ports import RenderedMessage
from outbox.domain.channels import Channel

BUILTIN_DIR = Path(__file__).parent / "builtin"
DEFAULT_LOCALE = "en"

_NAME = re.compile(r"[a-z0-9_]{1,64}", re.ASCII)
# Names the renderer sets itself; a parameter of the same name is ignored, so a
# non-secret parameter can never stand in for the sealed secret or its link.
_RESERVED = frozenset({"code", "link"})


@attrs.frozen
class _Parts:
    """The compiled templates of one template name, channel and locale."""

    subject: jinja2.Template | None
    text: jinja2.Template
    html: jinja2.Template | None


class JinjaRenderer:
    """Renders messages from built-in templates and an optional override directory.

    Lookups are resolved and compiled once per (template, channel, locale) and kept in
    memory; the environment never checks files again (``auto_reload`` off), so a render
    costs a dictionary lookup and the template code itself.
    """

    def __init__(
        self,
        *,
        override_dir: Path | None = None,
        default_locale: str = DEFAULT_LOCALE,
        resolved_cache_size: int = 1024,
    ) -> None:
        """Build the environment; ``override_dir`` files win over the built-in ones."""
        loaders: list[jinja2.BaseLoader] = [jinja2.FileSystemLoader(BUILTIN_DIR)]
        if override_dir is not None:
            loaders.insert(0, jinja2.FileSystemLoader(override_dir))
        self._default_locale = default_locale
        self._env = ImmutableSandboxedEnvironment(
            loader=jinja2.ChoiceLoader(loaders),
            autoescape=_is_html,
            undefined=jinja2.StrictUndefined,
            auto_reload=False,
            cache_size=-1,  # unbounded: only files that exist are ever cached
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self._globals = dict(self._env.globals)
        # Bounded, because the locale comes from the message row.
        self._resolve = functools.lru_cache(maxsize=resolved_cache_size)(self._lookup)

    def preload(self) -> int:
        """Compile every template file now, so a bad override fails at startup; return the count.

        Raises TemplateRenderFailed naming the first file that does not compile.
        """
        names = [
            name
            for name in self._env.list_templates()
            if not any(segment.startswith(".") for segment in name.split("/"))  # .DS_Store, .git
        ]
        for name in names:
            try:
                self._env.get_template(name)
            except jinja2.TemplateError as error:
                raise TemplateRenderFailed(f"{name}: {type(error).__name__}") from None
        return len(names)

    def render(
        self,
        *,
        template: str,
        channel: Channel,
        locale: str,
        params: Mapping[str, str],
        secret: str | None,
        link: str | None,
    ) -> RenderedMessage:
        """Render ``template`` for ``channel`` in the best locale available.

        ``secret`` is available to templates as ``code`` and ``link`` as ``link``.
        Raises TemplateNotFound when no locale has the template for the channel, and
        TemplateRenderFailed when it cannot render (a missing parameter, an unsafe call).
        """
        parts = self._resolve(template, channel, locale)
        context: dict[str, object] = dict(self._globals)
        context.update((k, v) for k, v in params.items() if k not in _RESERVED)
        if secret is not None:
            context["code"] = secret
        if link is not None:
            context["link"] = link
        subject = _render(parts.subject, context) if parts.subject is not None else ""
        return RenderedMessage(
            subject=" ".join(subject.split()),  # one line: no header injection through params
            text=_render(parts.text, context),
            html=_render(parts.html, context) if parts.html is not None else None,
        )

    def _lookup(self, template: str, channel: Channel, locale: str) -> _Parts:
        if not _NAME.fullmatch(template):
            raise TemplateNotFound(f"invalid template name {template[:64]!r}")
        chain = fallback_chain(locale, self._default_locale)
        text = self._find(template, channel, "text", chain)
        if text is None:
            raise TemplateNotFound(
                f"no template {template!r} for channel {channel.value!r}"
                f" in locales {', '.join(chain)}"
            )
        if channel is not Channel.EMAIL:
            return _Parts(subject=None, text=text, html=None)
        subject = self._find(template, channel, "subject", chain)
        if subject is None:
            raise TemplateNotFound(f"no subject for template {template!r} on channel 'email'")
        return _Parts(subject=subject, text=text, html=self._find(template, channel, "html", chain))

    def _find(
        self, template: str, channel: Channel, part: str, chain: tuple[str, ...]
    ) -> jinja2.Template | None:
        for locale in chain:
            name = f"{locale}/{template}.{channel.value}.{part}"
            try:
                return self._env.get_template(name)
            except jinja2.TemplateNotFound:
                continue
            except jinja2.TemplateError as error:
                raise TemplateRenderFailed(f"{name}: {type(error).__name__}") from None
        return None


def _render(template: jinja2.Template, context: dict[str, object]) -> str:
    try:
        # What Template.render does, minus copying the globals into a new dict for every
        # part (the caller built ``context`` from them once) and minus the template's
        # globals chain, which Template.new_context turns into a set of names for every
        # part although only imported macros read it: the context is built from the
        # caller's dict alone. 35 -> 14 us for a notification's three parts
        # (docs/benchmarks.md).
        environment = template.environment
        return "".join(
            template.root_render_func(
                environment.context_class(environment, context, template.name, template.blocks)
            )
        ).strip()
    except jinja2.UndefinedError as error:
        # The message names the missing variable, never a value.
        raise TemplateRenderFailed(f"{template.name}: {error.message}") from None
    except Exception as error:  # noqa: BLE001 - operator templates may raise anything
        raise TemplateRenderFailed(f"{template.name}: {type(error).__name__}") from None


def _is_html(name: str | None) -> bool:
    return name is not None and name.endswith(".html")
