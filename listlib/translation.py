"""The translation table: every word the site's pages show that is not from the mail.

A theme's ``locales/<language>.toml`` holds its strings in one language: TOML tables
of keys (``[message] removed = "..."`` is the key ``message.removed``), each value a
text with ``{name}`` placeholders, or a plural entry (a table of CLDR categories,
``one`` / ``few`` / ``many`` / ``other`` ...; its count is ``{n}``), and a
``[language]`` table: its ``name``, its ``plural`` rule (see ``PLURAL_RULES``) and
its ``decimal_separator`` and ``group_separator``.

For a site language such as ``de-CH`` the files searched are, first hit wins key by
key: each theme layer's ``de-CH.toml`` then its ``de.toml``, the site's folder first,
then the named theme, then the packaged default; so a site overrides one string by
putting that key alone in its own file. English is the reference: the keys are those
of the English tables (a theme that adds a string adds it to its ``en.toml``); a key
another language lacks is shown in English, with a warning. A language with no table
at all is an error naming ``site.language`` and the languages there are.

Why TOML tables and not gettext catalogs: keys, not English sentences, name the strings
(an English wording can change without orphaning every translation), a theme layer
overrides one key by having it (gettext has no per-key layering), there is nothing to
compile (no ``msgfmt``, no Babel dependency: ``tomllib`` is in the standard library),
and scripts get the same entries as JSON. What gettext's ``Plural-Forms`` does, the
``[language] plural`` rule does with CLDR's categories.

Texts are plain text: templates escape them (``theme`` fills the placeholders with
escaped values or with markup made by the template itself). Pure but for reading the
tables; never renders.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import BuildError

__all__ = [
    "CATEGORIES",
    "DEFAULT_LOCALES",
    "Entry",
    "PLURAL_RULES",
    "Texts",
    "english",
    "load_texts",
    "placeholders",
    "read_table",
]

DEFAULT_LOCALES = Path(__file__).resolve().parent / "themes" / "default" / "locales"
"""The packaged default theme's tables."""

CATEGORIES = ("zero", "one", "two", "few", "many", "other")
"""CLDR's plural categories: a plural entry's keys (``other`` is always there)."""


def _one_other(n: int) -> str:
    return "one" if n == 1 else "other"


def _zero_one_other(n: int) -> str:
    return "one" if n in (0, 1) else "other"


def _east_slavic(n: int) -> str:
    if n % 10 == 1 and n % 100 != 11:
        return "one"
    if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14:
        return "few"
    return "many"


def _polish(n: int) -> str:
    if n == 1:
        return "one"
    if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14:
        return "few"
    return "many"


def _czech(n: int) -> str:
    return "one" if n == 1 else "few" if 2 <= n <= 4 else "other"


def _other(n: int) -> str:
    return "other"


PLURAL_RULES: dict[str, tuple[Callable[[int], str], tuple[str, ...]]] = {
    "one-other": (_one_other, ("one", "other")),
    "zero-one-other": (_zero_one_other, ("one", "other")),
    "east-slavic": (_east_slavic, ("one", "few", "many", "other")),
    "polish": (_polish, ("one", "few", "many", "other")),
    "czech": (_czech, ("one", "few", "other")),
    "other": (_other, ("other",)),
}
"""A table's ``[language] plural``: the category a whole count takes (CLDR's rules for
cardinals): ``one-other`` (English, German, Dutch, Italian, Spanish ...: one is 1),
``zero-one-other`` (French, Brazilian Portuguese: one is 0 and 1), ``east-slavic``
(Russian, Ukrainian), ``polish``, ``czech`` (and Slovak), ``other`` (Japanese, Chinese,
Korean ...: no plural); with the categories an entry of that language needs.
``search.js`` has the same rules for the strings it counts with."""

FILLED_KEPT = 4096
"""How many filled texts a ``Texts`` keeps (``Texts.text``): every count of lines a page
shows, with room to spare, and a bound for a long-running process."""

_PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_LANGUAGE_KEYS = {"name", "plural", "decimal_separator", "group_separator"}

Entry = str | Mapping[str, str]
"""A text, or a plural entry: category -> text."""


def placeholders(entry: Entry) -> set[str]:
    """The ``{name}`` placeholders of an entry (of all its forms)."""
    texts = [entry] if isinstance(entry, str) else list(entry.values())
    return {name for text in texts for name in _PLACEHOLDER_RE.findall(text)}


def fill(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each ``{name}`` replaced by ``values[name]`` (a missing one stays)."""
    if "{" not in text:
        return text
    return _PLACEHOLDER_RE.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def read_table(path: Path) -> tuple[dict[str, str], dict[str, Entry]]:
    """One table file: its ``[language]`` settings and its entries by dotted key."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BuildError(f"{path}: cannot read the translation table ({exc})") from None
    settings = data.pop("language", {})
    if not isinstance(settings, dict) or not all(isinstance(v, str) for v in settings.values()):
        raise BuildError(f"{path}: [language] must hold text values ({', '.join(sorted(_LANGUAGE_KEYS))})")
    unknown = set(settings) - _LANGUAGE_KEYS
    if unknown:
        raise BuildError(f"{path}: language.{sorted(unknown)[0]}: unknown key")
    if "plural" in settings and settings["plural"] not in PLURAL_RULES:
        rules = ", ".join(PLURAL_RULES)
        raise BuildError(f"{path}: language.plural: {settings['plural']!r} is not one of {rules}")
    entries: dict[str, Entry] = {}
    _flatten(path, data, "", entries)
    return settings, entries


def _flatten(path: Path, table: Mapping[str, object], prefix: str, into: dict[str, Entry]) -> None:
    for name, value in table.items():
        key = f"{prefix}{name}"
        if isinstance(value, str):
            into[key] = value
        elif isinstance(value, dict) and value and set(value) <= set(CATEGORIES) and "other" in value:
            if not all(isinstance(v, str) for v in value.values()):
                raise BuildError(f"{path}: {key}: a plural entry's forms must be text")
            into[key] = dict(value)
        elif isinstance(value, dict):
            _flatten(path, value, key + ".", into)
        else:
            raise BuildError(f"{path}: {key}: must be text, a table of texts, or a plural entry")


@dataclass(frozen=True)
class Texts:
    """The strings of one language, merged from a theme's layers."""

    language: str
    """The language asked for (``[site] language``, e.g. ``de-CH``)."""
    entries: Mapping[str, Entry]
    plural: str = "one-other"
    decimal_separator: str = "."
    group_separator: str = ","
    warnings: tuple[str, ...] = field(default=(), compare=False)
    """What loading found amiss (untranslated or unknown keys), one sentence each."""
    _filled: dict[tuple[str, int | None], str] = field(default_factory=dict, init=False, repr=False, compare=False)
    """Texts already filled, by key and count: displaying a message asks for the same few
    words (a label, "N quoted lines") again and again. At most ``FILLED_KEPT`` of them."""

    def text(self, key: str, **values: object) -> str:
        """The text of ``key`` with its placeholders filled (plain text; ``n`` counts a
        plural entry)."""
        kept: tuple[str, int | None] | None = None
        if not values:
            kept = (key, None)
        elif len(values) == 1 and type(values.get("n")) is int:
            kept = (key, values["n"])  # type: ignore[assignment]
        if kept is not None:
            found = self._filled.get(kept)
            if found is not None:
                return found
        entry = self._entry(key)
        if isinstance(entry, str):
            filled = fill(entry, {name: str(value) for name, value in values.items()})
        elif "n" not in values:
            raise KeyError(f"{key!r} is a plural entry: give its count as n")
        else:
            filled = fill(self.form(entry, int(values["n"])), {name: str(value) for name, value in values.items()})  # type: ignore[call-overload]
        if kept is not None and len(self._filled) < FILLED_KEPT:
            self._filled[kept] = filled
        return filled

    def form(self, entry: Mapping[str, str], count: int) -> str:
        """The form of a plural entry for ``count``."""
        category = PLURAL_RULES[self.plural][0](count)
        return entry.get(category, entry["other"])

    def is_plural(self, key: str) -> bool:
        return not isinstance(self._entry(key), str)

    def raw(self, key: str) -> Entry:
        """The entry of ``key`` as the table has it."""
        return self._entry(key)

    def _entry(self, key: str) -> Entry:
        try:
            return self.entries[key]
        except KeyError:
            near = difflib.get_close_matches(key, list(self.entries), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            raise KeyError(f"no string {key!r} in the translation table{hint}") from None

    def number(self, value: float, decimals: int = 0) -> str:
        """A number as the language writes it (``12,345.5`` or ``12.345,5``)."""
        text = f"{value:,.{decimals}f}"
        return text.replace(",", "\0").replace(".", self.decimal_separator).replace("\0", self.group_separator)

    def keys_under(self, prefix: str) -> list[str]:
        """The keys that start with ``prefix`` (``"js.search."``), sorted."""
        return sorted(key for key in self.entries if key.startswith(prefix))

    def digest(self, keys: Iterable[str]) -> str:
        """A digest of these keys' entries (and of the language's settings): part of the
        fingerprint of what uses them."""
        wanted = sorted(set(keys))
        data = [self.language, self.plural, self.decimal_separator, self.group_separator]
        data += [[key, self.entries.get(key)] for key in wanted]
        return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:24]

    def digest_all(self) -> str:
        return self.digest(self.entries)

    def script_data(self, prefix: str) -> dict[str, object]:
        """What a script needs of the keys under ``prefix``: their entries (by the rest of
        their key), the plural rule and the separators."""
        entries = {key[len(prefix) :]: self.entries[key] for key in self.keys_under(prefix)}
        return {
            "language": self.language,
            "plural": self.plural,
            "decimal": self.decimal_separator,
            "group": self.group_separator,
            "texts": entries,
        }


def _tables(folders: Sequence[Path], tag: str) -> list[Path]:
    """The table files for ``tag``, first hit first: per folder, the tag then its
    language alone (``de-CH``, ``de``)."""
    names = [tag]
    if "-" in tag:
        names.append(tag.split("-", 1)[0])
    found = []
    for folder in folders:
        for name in names:
            for candidate in (folder / f"{name}.toml", folder / f"{name.lower()}.toml"):
                if candidate.is_file():
                    found.append(candidate)
                    break
    return found


def available_languages(folders: Sequence[Path]) -> list[str]:
    """The languages these folders have a table for."""
    return sorted({path.stem for folder in folders if folder.is_dir() for path in folder.glob("*.toml")})


def load_texts(folders: Sequence[Path], language: str) -> Texts:
    """The strings of ``language`` (``[site] language``) from these ``locales/`` folders,
    the first folder winning key by key (see the module docstring)."""
    english_files = _tables(folders, "en")
    if not english_files:
        raise BuildError(f"no English translation table (en.toml) in {', '.join(map(str, folders))}")
    read: dict[Path, tuple[dict[str, str], dict[str, Entry]]] = {}  # English is read once, not twice
    reference: dict[str, Entry] = {}
    english_settings: dict[str, str] = {}
    for path in reversed(english_files):
        settings, entries = read[path] = read_table(path)
        reference.update(entries)
        english_settings.update(settings)
    base = language.split("-", 1)[0].lower()
    files = _tables(folders, language)
    if not files:
        available = ", ".join(available_languages(folders))
        raise BuildError(
            f"site.language: no translation table for {language!r} (there are: {available}); "
            f"set [site] language to one of them, or add locales/{base}.toml to your theme "
            "(see 'Theming' in the README)"
        )
    merged: dict[str, Entry] = {}
    settings: dict[str, str] = dict(english_settings) if base == "en" else {}
    warnings: list[str] = []
    for path in reversed(files):
        found_settings, entries = read[path] if path in read else read_table(path)
        settings.update(found_settings)
        for key in sorted(set(entries) - set(reference)):
            near = difflib.get_close_matches(key, list(reference), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            warnings.append(f"{path}: {key}: no such string in the English table, left unused{hint}")
        merged.update({key: value for key, value in entries.items() if key in reference})
    missing = sorted(set(reference) - set(merged))
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        warnings.append(
            f"site.language: {len(missing)} strings have no {language!r} translation, shown in English: {shown}"
        )
        merged.update({key: reference[key] for key in missing})
    plural = settings.get("plural", "one-other")
    needed = PLURAL_RULES[plural][1]
    for key, entry in merged.items():
        if not isinstance(entry, str) and key not in missing:
            lacking = [category for category in needed if category not in entry and category != "other"]
            if lacking:
                warnings.append(f"site.language: {key}: no {'/'.join(lacking)} form for {plural!r} plurals")
    return Texts(
        language=language,
        entries={key: merged[key] for key in sorted(merged)},
        plural=plural,
        decimal_separator=settings.get("decimal_separator", "."),
        group_separator=settings.get("group_separator", ","),
        warnings=tuple(warnings),
    )


@functools.cache
def english() -> Texts:
    """The packaged English table: the words of code used outside a build (tests,
    ``display_message`` called without a table)."""
    return load_texts([DEFAULT_LOCALES], "en")
