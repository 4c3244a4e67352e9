"""Theme lookup: which template and static file a site uses, and their fingerprints.

A theme is a folder with ``templates/`` and ``static/``. The chain searched, first hit
wins, file by file:

1. the site's own theme folder (``[theme] dir``), if any;
2. the theme named by ``[theme] name``: ``themes/<name>`` next to listlib.toml, or the
   ``default`` theme packaged with listlib;
3. the packaged ``default`` theme, so a theme only needs the files it changes.

A template extends another theme's version of itself block by block with
``{% extends "!default/thread.html" %}`` (``!<theme>/`` names a theme of the chain,
``!site/`` the site folder).

Fingerprints tell the renderer what a change touches: a template's fingerprint covers
its own source and every template it extends, includes or imports, so editing
``message.html`` rebuilds the pages that use it and nothing else. jinja2 lives here and
in ``render``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import markupsafe

from .errors import BuildError

__all__ = ["DEFAULT_THEME", "Theme", "load_theme"]

DEFAULT_THEME = Path(__file__).resolve().parent / "themes" / "default"


@dataclass(frozen=True)
class _Layer:
    name: str
    folder: Path


class _ChainLoader(jinja2.BaseLoader):
    """Finds ``name`` in the first layer that has it; ``!layer/name`` in that layer only."""

    def __init__(self, layers: tuple[_Layer, ...]) -> None:
        self.layers = layers

    def _candidates(self, template: str) -> Iterator[Path]:
        if template.startswith("!"):
            wanted, _, rest = template[1:].partition("/")
            for layer in self.layers:
                if layer.name == wanted:
                    yield layer.folder / "templates" / rest
            return
        for layer in self.layers:
            yield layer.folder / "templates" / template

    def get_source(
        self, environment: jinja2.Environment, template: str
    ) -> tuple[str, str | None, Callable[[], bool] | None]:
        parts = template.lstrip("!").split("/")
        if any(part in ("", ".", "..") for part in parts[1:]) or ".." in parts:
            raise jinja2.TemplateNotFound(template)
        for path in self._candidates(template):
            if path.is_file():
                source = path.read_text(encoding="utf-8")
                mtime = path.stat().st_mtime_ns
                return source, str(path), lambda p=path, m=mtime: p.is_file() and p.stat().st_mtime_ns == m
        raise jinja2.TemplateNotFound(template)

    def list_templates(self) -> list[str]:
        found: set[str] = set()
        for layer in self.layers:
            root = layer.folder / "templates"
            for dirpath, _dirs, files in os.walk(root):
                for name in files:
                    found.add(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
        return sorted(found)


CONTENT_SECURITY_POLICY = "script-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'"
"""Every page's policy, as the templates' ``content_security_policy`` (DESIGN.md
invariant 6, defence in depth): scripts only from the site's own files (no inline
script, no eval), no plugins, no ``<base>``, forms post only to the site. A ``<meta>``
policy cannot set ``frame-ancestors``; the README's server snippets send this policy
as a header, with that and ``nosniff``: keep them in step. A template global, not an
included template: an include costs every one of a big archive's pages a new context."""


class Theme:
    """The templates and static files a build uses."""

    def __init__(self, layers: tuple[_Layer, ...], compiled_dir: Path | None = None) -> None:
        """``compiled_dir``: where compiled templates are kept between runs (jinja2 checks
        each against its source); compiling them all again costs a build a fifth of a second."""
        self.layers = layers
        bytecode_cache = None
        if compiled_dir is not None:
            compiled_dir.mkdir(parents=True, exist_ok=True)
            bytecode_cache = jinja2.FileSystemBytecodeCache(str(compiled_dir))
        self.env = jinja2.Environment(
            loader=_ChainLoader(layers),
            bytecode_cache=bytecode_cache,
            autoescape=jinja2.select_autoescape(["html", "xml", "atom"], default_for_string=True),
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
            # A Theme lives for one build: checking every template's file again at each
            # use (two stats per page and per included message) buys nothing.
            auto_reload=False,
        )
        self.env.globals["content_security_policy"] = markupsafe.Markup(CONTENT_SECURITY_POLICY)
        self._fingerprints: dict[str, str] = {}

    def template(self, name: str) -> jinja2.Template:
        try:
            return self.env.get_template(name)
        except jinja2.TemplateSyntaxError as exc:
            raise BuildError(f"{exc.filename or exc.name}:{exc.lineno}: template error: {exc.message}") from None
        except jinja2.TemplateNotFound as exc:
            raise BuildError(f"template {exc.name!r} not found in theme {self.describe()}") from None

    def render(self, name: str, **context: Any) -> str:
        """Render a template; a template's mistake becomes a BuildError naming file and line."""
        template = self.template(name)
        try:
            return template.render(**context)
        except jinja2.TemplateError as exc:
            raise BuildError(f"{_template_location(exc, template)}: template error: {exc}") from None

    def sources_digest(self) -> str:
        """A digest of every template file of every layer, with its path: fingerprints
        are a function of it, so they can be remembered by it."""
        digest = hashlib.sha256()
        for layer in self.layers:
            root = layer.folder / "templates"
            for dirpath, dirs, files in os.walk(root):
                dirs.sort()
                for name in sorted(files):
                    path = os.path.join(dirpath, name)
                    digest.update(f"{layer.name}\0{path}\0".encode("utf-8", "surrogateescape"))
                    digest.update(hashlib.sha256(Path(path).read_bytes()).digest())
        return digest.hexdigest()[:32]

    def describe(self) -> str:
        return " -> ".join(str(layer.folder) for layer in self.layers)

    def fingerprint(self, name: str) -> str:
        """A digest of ``name`` and every template it references, transitively."""
        cached = self._fingerprints.get(name)
        if cached is not None:
            return cached
        digest = hashlib.sha256()
        seen: set[str] = set()
        pending = [name]
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            try:
                source, filename, _ = self.env.loader.get_source(self.env, current)  # type: ignore[union-attr]
            except jinja2.TemplateNotFound:
                digest.update(f"missing {current}\0".encode())
                continue
            digest.update(f"{current}\0{self._where(filename)}\0{len(source)}\0".encode())
            digest.update(source.encode())
            try:
                references = list(jinja2.meta.find_referenced_templates(self.env.parse(source)))
            except jinja2.TemplateSyntaxError as exc:
                raise BuildError(f"{filename}:{exc.lineno}: template error: {exc.message}") from None
            if None in references:
                # A computed template name: any template may be used.
                pending.extend(self.env.loader.list_templates())  # type: ignore[union-attr]
            pending.extend(sorted(ref for ref in references if ref is not None))
        value = digest.hexdigest()[:24]
        self._fingerprints[name] = value
        return value

    def _where(self, filename: str | None) -> str:
        """A template file as its layer's name and its path in the layer: not where the
        layer is on disk (moving an install must not change what pages depend on)."""
        path = Path(filename or "")
        for layer in self.layers:
            if path.is_relative_to(layer.folder):
                return f"{layer.name}:{path.relative_to(layer.folder).as_posix()}"
        return str(path)

    def static_layer(self, name: str) -> Path:
        """The static/ folder of the layer called ``name``."""
        for layer in self.layers:
            if layer.name == name:
                return layer.folder / "static"
        raise BuildError(f"no theme layer {name!r}")

    def static_sources(self) -> dict[str, tuple[str, Path]]:
        """Every static file by its path under ``static/``: the name of the layer that
        provides it (the first layer having it) and its file."""
        files: dict[str, tuple[str, Path]] = {}
        for layer in reversed(self.layers):
            root = layer.folder / "static"
            for dirpath, dirs, names in os.walk(root):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in names:
                    if name.startswith("."):
                        continue
                    path = Path(dirpath) / name
                    files[path.relative_to(root).as_posix()] = (layer.name, path)
        return dict(sorted(files.items()))

    def static_files(self) -> dict[str, Path]:
        """Every static file by its path under ``static/``, the first layer winning."""
        return {rel: path for rel, (_layer, path) in self.static_sources().items()}


def _template_location(exc: BaseException, template: jinja2.Template) -> str:
    """The innermost template frame of a rendering error, as ``file:line``."""
    where = template.filename or template.name or "template"
    trace = exc.__traceback__
    while trace is not None:
        filename = trace.tb_frame.f_code.co_filename
        if filename.endswith((".html", ".xml", ".atom", ".txt")):
            where = f"{filename}:{trace.tb_lineno}"
        trace = trace.tb_next
    return where


def load_theme(name: str, site_dir: Path | None, root: Path, compiled_dir: Path | None = None) -> Theme:
    """The theme chain for a site (see the module docstring); ``compiled_dir``: see ``Theme``."""
    layers: list[_Layer] = []
    if site_dir is not None:
        if not site_dir.is_dir():
            raise BuildError(f"theme.dir: {site_dir} is not a folder")
        layers.append(_Layer("site", site_dir))
    if name != "default":
        folder = root / "themes" / name
        if not (folder / "templates").is_dir() and not (folder / "static").is_dir():
            raise BuildError(f"theme.name: no theme {name!r} (looked for {folder}/templates)")
        layers.append(_Layer(name, folder))
    layers.append(_Layer("default", DEFAULT_THEME))
    return Theme(tuple(layers), compiled_dir)
