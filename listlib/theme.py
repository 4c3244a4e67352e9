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
``message.html`` rebuilds the pages that use it and nothing else; and the strings of the
translation table (``translation``) those templates use, so editing a translation
rebuilds the pages that show it and nothing else. jinja2 lives here and in ``render``.

Templates say every word through the table: ``{{ t("key", name=value) }}`` (a plural
entry counts ``n``: ``t("count.message", n=3)``), and a script's words are put in its
page as JSON with ``{{ texts_json("js.search") }}``. A template names its keys as
constants (or as a constant prefix, ``t("months." ~ m)``), so its fingerprint can name
the strings it uses.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta
import jinja2.nodes
import jinja2.visitor
import markupsafe

from .errors import BuildError
from .translation import Texts, load_texts

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


FILTER_TEXTS: dict[str, tuple[str, ...]] = {"size": ("size.",), "month_name": ("months.",)}
"""The strings of the table that the renderer's filters use (``counted("noun")`` uses
``count.<noun>``)."""

_PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


_MISSING = object()


def _escape(text: str) -> str:
    return html.escape(text, quote=False).replace('"', "&quot;")


def _code(text: object) -> markupsafe.Markup:
    """``code("list:slug")`` in a template: text shown as code, for a placeholder of ``t()``
    (commands and query syntax are not translated)."""
    return markupsafe.Markup("<code>{}</code>").format(text)


class _SaidOnce(jinja2.visitor.NodeTransformer):
    """Replaces each ``t("key")`` whose arguments are all constants with the text it
    says, as markup, and each ``texts_json("prefix")`` with its JSON: a build has one
    language, so its constant words are looked up once, when a template is compiled,
    not at each use on each page. A call that fails (a key the table lacks, a plural
    entry without ``n``) is left to fail when the page is rendered, as before; one
    with values of the page becomes a call of the same function as a filter."""

    def __init__(self, said: dict[str, Callable[..., markupsafe.Markup]]) -> None:
        self.said = said

    def visit_Call(self, node: jinja2.nodes.Call) -> jinja2.nodes.Node:
        node = self.generic_visit(node)
        if not (
            isinstance(node.node, jinja2.nodes.Name)
            and node.node.name in self.said
            and len(node.args) == 1
            and node.dyn_args is None
            and node.dyn_kwargs is None
        ):
            return node
        values = [node.args[0], *(keyword.value for keyword in node.kwargs)]
        if not all(_constant(value) for value in values):
            # Called as a filter: jinja2 calls a filter itself, a function through
            # Context.call (which asks each time whether it wants the context).
            return jinja2.nodes.Filter(
                node.args[0], _filter_name(node.node.name), [], node.kwargs, None, None, lineno=node.lineno
            )
        say = self.said[node.node.name]
        try:
            said = say(_value(node.args[0]), **{keyword.key: _value(keyword.value) for keyword in node.kwargs})
        except (jinja2.TemplateRuntimeError, TypeError, ValueError, KeyError):
            return node
        return jinja2.nodes.MarkSafe(jinja2.nodes.Const(str(said)), lineno=node.lineno)


def _filter_name(name: str) -> str:
    """The filter a function of the table is also registered as (``_Environment.say_with``)."""
    return f"_said_{name}"


def _constant(node: jinja2.nodes.Node) -> bool:
    """A string or whole number written in the template, or markup ``t()`` made of one."""
    if isinstance(node, jinja2.nodes.MarkSafe):
        return isinstance(node.expr, jinja2.nodes.Const) and isinstance(node.expr.value, str)
    return isinstance(node, jinja2.nodes.Const) and type(node.value) in (str, int)


def _value(node: jinja2.nodes.Node) -> object:
    if isinstance(node, jinja2.nodes.MarkSafe):
        return markupsafe.Markup(node.expr.value)  # type: ignore[attr-defined]
    return node.value  # type: ignore[attr-defined]


def _own_names(tree: jinja2.nodes.Template) -> set[str]:
    """The names a template gives a value of its own (``set``, ``for``, ``with``, a
    macro's parameter, an import): a ``t()`` of its own is not the table's."""
    names = {name.name for name in tree.find_all(jinja2.nodes.Name) if name.ctx != "load"}
    names.update(imported.target for imported in tree.find_all(jinja2.nodes.Import))
    for imported in tree.find_all(jinja2.nodes.FromImport):
        names.update(item if isinstance(item, str) else item[-1] for item in imported.names)
    return names


class _Environment(jinja2.Environment):
    """jinja2's environment, with a theme's constant words said at compile time
    (``_SaidOnce``)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.said: dict[str, Callable[..., markupsafe.Markup]] = {}
        """The functions of the table, by their names in a template."""

    def say_with(self, said: dict[str, Callable[..., markupsafe.Markup]]) -> None:
        """Templates compiled from now on call these functions of the table (by their
        names in a template) as ``_SaidOnce`` says."""
        self.said = said
        for name, function in said.items():
            self.filters[_filter_name(name)] = function

    def _generate(
        self, source: jinja2.nodes.Template, name: str | None, filename: str | None, defer_init: bool = False
    ) -> str:
        own = _own_names(source)
        said = {called: function for called, function in self.said.items() if called not in own}
        if said:
            source = _SaidOnce(said).visit(source)
        return super()._generate(source, name, filename, defer_init=defer_init)


class _BytecodeCache(jinja2.FileSystemBytecodeCache):
    """Compiled templates kept on disk, each checked against its source and against the
    translation table whose constant words it holds (``_SaidOnce``): a compiled
    template of another language or an older table is compiled again."""

    def __init__(self, directory: str, texts_digest: str) -> None:
        super().__init__(directory)
        self.texts_digest = texts_digest

    def get_source_checksum(self, source: str) -> str:
        return hashlib.sha1(f"{self.texts_digest}\0{source}".encode()).hexdigest()


class Theme:
    """The templates and static files a build uses."""

    def __init__(self, layers: tuple[_Layer, ...], compiled_dir: Path | None = None, language: str = "en") -> None:
        """``compiled_dir``: where compiled templates are kept between runs (jinja2 checks
        each against its source); compiling them all again costs a build a fifth of a second.
        ``language``: ``[site] language``, whose table the templates' ``t()`` reads."""
        self.layers = layers
        self.texts: Texts = load_texts([layer.folder / "locales" for layer in layers], language)
        bytecode_cache = None
        if compiled_dir is not None:
            compiled_dir.mkdir(parents=True, exist_ok=True)
            bytecode_cache = _BytecodeCache(str(compiled_dir), self.texts.digest_all())
        self.env = _Environment(
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
        # Table text escaped once, as a template's own text would be written: quotes as
        # &quot; (attributes are double-quoted), apostrophes left as they are.
        self._escaped: dict[str, str | dict[str, str]] = {
            key: _escape(entry) if isinstance(entry, str) else {form: _escape(text) for form, text in entry.items()}
            for key, entry in self.texts.entries.items()
        }
        self.env.globals["t"] = self.say
        self.env.say_with({"t": self.say, "texts_json": self.texts_json})
        self.env.globals["texts_json"] = self.texts_json
        self.env.globals["code"] = _code
        self._fingerprints: dict[str, str] = {}
        self._split: dict[str, tuple[str, ...]] = {}
        """An escaped text with placeholders -> its pieces, for ``say``."""

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

    def say(self, key: str, **values: object) -> markupsafe.Markup:
        """``t(key, ...)`` in a template: the text of ``key``, escaped, its placeholders
        filled with ``values`` (escaped, unless markup the template made); a plural
        entry takes the form for ``n``."""
        entry = self._escaped.get(key)
        if entry is None:
            try:
                self.texts.raw(key)
            except KeyError as exc:
                raise jinja2.TemplateRuntimeError(str(exc.args[0])) from None
        if not isinstance(entry, str):
            if "n" not in values:
                raise jinja2.TemplateRuntimeError(f"t({key!r}) is a plural entry: give its count as n=")
            entry = self.texts.form(entry, int(values["n"]))  # type: ignore[arg-type,call-overload]
        if not values or "{" not in entry:
            return markupsafe.Markup(entry)
        split = self._split.get(entry)
        if split is None:
            split = self._split[entry] = tuple(_PLACEHOLDER_RE.split(entry))  # text, name, text, name … text
        parts = list(split)
        escape = markupsafe.escape
        for at in range(1, len(parts), 2):
            value = values.get(parts[at], _MISSING)
            parts[at] = "{" + parts[at] + "}" if value is _MISSING else escape(value)
        return markupsafe.Markup("".join(parts))

    def texts_json(self, prefix: str) -> markupsafe.Markup:
        """``texts_json("js.search")`` in a template: the strings under that prefix (and
        the plural rule) as JSON for a ``<script type="application/json">`` element."""
        data = json.dumps(self.texts.script_data(prefix + "."), ensure_ascii=False, sort_keys=True)
        return markupsafe.Markup(data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))

    def texts_fingerprint(self, prefixes: tuple[str, ...]) -> str:
        """A digest of the strings under these prefixes (those the code of a kind of page
        uses besides its templates': ``plan.kinds.Kind.texts``)."""
        return self.texts.digest(key for prefix in prefixes for key in self.texts.keys_under(prefix))

    def sources_digest(self) -> str:
        """A digest of every template file of every layer, with its path, and of the
        translation table: fingerprints are a function of them, so they can be
        remembered by it."""
        digest = hashlib.sha256()
        digest.update(self.texts.digest_all().encode())
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
        keys: set[str] = set()
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
                tree = self.env.parse(source)
            except jinja2.TemplateSyntaxError as exc:
                raise BuildError(f"{filename}:{exc.lineno}: template error: {exc.message}") from None
            references = list(jinja2.meta.find_referenced_templates(tree))
            keys |= self._keys_used(tree, filename or current)
            if None in references:
                # A computed template name: any template may be used.
                pending.extend(self.env.loader.list_templates())  # type: ignore[union-attr]
            pending.extend(sorted(ref for ref in references if ref is not None))
        digest.update(self.texts.digest(keys).encode())
        value = digest.hexdigest()[:24]
        self._fingerprints[name] = value
        return value

    def _keys_used(self, tree: jinja2.nodes.Template, filename: str) -> set[str]:
        """The keys of the translation table a template's own source uses: ``t()`` and
        ``texts_json()`` calls and the filters that read the table. A key the table
        lacks is an error naming the template; a key that is not a constant (nor a
        constant followed by more) makes the template depend on the whole table."""
        keys: set[str] = set()
        everything = list(self.texts.entries)

        def named(node: jinja2.nodes.Node, prefix_only: bool) -> None:
            if isinstance(node, jinja2.nodes.Const) and isinstance(node.value, str):
                if prefix_only:
                    found = self.texts.keys_under(node.value)
                    if not found:
                        raise BuildError(f"{filename}:{node.lineno}: no strings under {node.value!r} in the table")
                    keys.update(found)
                elif node.value not in self.texts.entries:
                    raise BuildError(f"{filename}:{node.lineno}: no string {node.value!r} in the translation table")
                else:
                    keys.add(node.value)
            elif isinstance(node, jinja2.nodes.Concat) and node.nodes:
                named(node.nodes[0], True)
            elif isinstance(node, jinja2.nodes.Add):
                named(node.left, True)
            else:
                keys.update(everything)

        for call in tree.find_all(jinja2.nodes.Call):
            if isinstance(call.node, jinja2.nodes.Name) and call.node.name in ("t", "texts_json"):
                if call.args:
                    named(call.args[0], call.node.name == "texts_json")
                    if call.node.name == "texts_json" and isinstance(call.args[0], jinja2.nodes.Const):
                        keys.update(self.texts.keys_under(str(call.args[0].value) + "."))
                else:
                    keys.update(everything)
        for used in tree.find_all(jinja2.nodes.Filter):
            for prefix in FILTER_TEXTS.get(used.name, ()):
                keys.update(self.texts.keys_under(prefix))
            if used.name == "counted":
                if used.args and isinstance(used.args[0], jinja2.nodes.Const):
                    keys.add(f"count.{used.args[0].value}")
                else:
                    keys.update(self.texts.keys_under("count."))
        return keys

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


def load_theme(
    name: str, site_dir: Path | None, root: Path, compiled_dir: Path | None = None, language: str = "en"
) -> Theme:
    """The theme chain for a site (see the module docstring); ``compiled_dir`` and
    ``language``: see ``Theme``."""
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
    return Theme(tuple(layers), compiled_dir, language)
