"""Every text/background pair of the default theme reaches WCAG 2.x AA contrast (4.5:1
for normal text) in both colour schemes, measured from the stylesheet itself: its
custom properties as ``:root`` sets them (light) and as
``@media (prefers-color-scheme: dark)`` overrides them.

Which pairs: a rule that sets a text colour and no background may put that text on any
background the theme paints (the page, panels, tags: a link in the table of contents,
muted text in a note); a rule that sets both (the search highlight ``mark``) is its own
pair, its ``inherit`` standing for every text colour. The rendered pages are measured
the same way in real Chromium by ``tests/e2e/test_browser.py``."""

from __future__ import annotations

import re
from itertools import product

import pytest

from ..support.helpers import REPO

STYLE = REPO / "listlib/themes/default/static/style.css"
AA = 4.5
SCHEMES = ("light", "dark")


def parse(css: str) -> list[tuple[str, str, dict[str, str]]]:
    """(scheme or "", selector, declarations) of every rule, at any depth of @media."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    out: list[tuple[str, str, dict[str, str]]] = []

    def walk(text: str, scheme: str) -> None:
        at = 0
        while True:
            brace = text.find("{", at)
            if brace < 0:
                return
            head = text[at:brace].strip()
            depth, end = 1, brace + 1
            while depth:
                depth += {"{": 1, "}": -1}.get(text[end], 0)
                end += 1
            body = text[brace + 1 : end - 1]
            if head.startswith("@media"):
                walk(body, "dark" if "prefers-color-scheme: dark" in head else scheme)
            else:
                declarations = {}
                for part in body.split(";"):
                    name, colon, value = part.partition(":")
                    if colon:
                        declarations[name.strip()] = value.strip()
                out.append((scheme, head, declarations))
            at = end

    walk(css, "")
    return out


def luminance(colour: str) -> float:
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    assert re.fullmatch(r"[0-9a-fA-F]{6}", digits), f"not a #rrggbb colour: {colour}"
    channels = [int(digits[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_contrast_formula_matches_known_values() -> None:
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)
    assert contrast("#1d1f21", "#1d1f21") == pytest.approx(1.0)


def theme_pairs(css: str, scheme: str) -> list[tuple[str, str, str, str]]:
    """(text colour, background, its name, the background's name) for every pair the
    stylesheet can show in ``scheme``."""
    rules = parse(css)
    values: dict[str, str] = {}
    for rule_scheme, selector, declarations in rules:
        if selector == ":root" and rule_scheme in ("", scheme):
            values.update((k, v) for k, v in declarations.items() if k.startswith("--"))

    def colour(value: str) -> tuple[str, str] | None:
        found = re.search(r"var\((--[\w-]+)\)|(#[0-9a-fA-F]{3,6})\b", value)
        if found is None:
            return None
        return (found[1], values[found[1]]) if found[1] else (found[2], found[2])

    texts: set[tuple[str, str]] = set()
    grounds: set[tuple[str, str]] = set()
    own: list[tuple[str, tuple[str, str]]] = []
    for rule_scheme, selector, declarations in rules:
        if rule_scheme not in ("", scheme) or selector == ":root":
            continue
        text = declarations.get("color")
        ground = declarations.get("background-color") or declarations.get("background")
        ground_colour = colour(ground) if ground else None
        if text is not None and ground_colour is not None and selector != "body":
            own.append((text, ground_colour))
            continue
        if text is not None:
            found = colour(text)
            assert found is not None or text in ("inherit", "currentColor"), f"{selector}: color {text}"
            if found:
                texts.add(found)
        if ground_colour is not None:
            grounds.add(ground_colour)
    pairs = [(t[1], g[1], t[0], g[0]) for t, g in product(sorted(texts), sorted(grounds))]
    for text, ground in own:
        found = colour(text)
        for t in [found] if found else sorted(texts):
            pairs.append((t[1], ground[1], t[0], ground[0]))
    return pairs


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_text_and_background_pair_reaches_aa(scheme: str) -> None:
    pairs = theme_pairs(STYLE.read_text(encoding="utf-8"), scheme)
    names = {name for _t, _g, name, _gn in pairs}
    grounds = {name for _t, _g, _n, name in pairs}
    # The parse found the theme's colours (a broken parse must not pass by finding nothing).
    assert {"--fg", "--muted", "--accent", "--accent-visited", "--quote", "--mark-fg"} <= names
    assert {"--bg", "--panel", "--tag-bg", "--mark-bg"} <= grounds
    # Diffs in bodies: hunk headers on every ground, added and removed lines on their own.
    assert {"--diff-hunk", "--diff-add", "--diff-del"} <= names
    assert {("--diff-add", "--diff-add-bg"), ("--diff-del", "--diff-del-bg")} <= {(n, g) for _t, _g, n, g in pairs}
    low = [
        f"{name} {text} on {ground_name} {ground}: {contrast(text, ground):.2f}"
        for text, ground, name, ground_name in pairs
        if contrast(text, ground) < AA
    ]
    assert low == [], f"{scheme}: below {AA}:1"


def test_an_inherited_highlight_colour_is_measured_against_every_text_colour() -> None:
    css = ":root { --bg: #ffffff; --fg: #000000; --muted: #ffffff; } body { background: var(--bg); color: var(--fg); }"
    css += " .m { color: var(--muted); } mark { background: #ffff00; color: inherit; }"
    found = {(name, ground) for _t, _g, name, ground in theme_pairs(css, "light")}
    assert ("--muted", "#ffff00") in found and ("--fg", "#ffff00") in found
