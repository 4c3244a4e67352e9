"""The folders listlib manages must stay apart: the output, the store, the queue, the
cache, the themes and listlib.toml's own folder.

A build empties and sweeps its output folder and clears its cache, so an overlap
would delete mail or a theme; each one is recorded on the Reader naming both paths.
Compares paths only; never touches the disk.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..errors import ConfigIssue
from .reader import Reader
from .schema import SiteConfig, ThemeConfig

__all__ = ["check_folders"]


def _overlap(a: Path, b: Path) -> str | None:
    """How folder ``a`` overlaps folder ``b`` ("is", "is inside", "contains"), or None."""
    if a == b:
        return "is"
    if a.is_relative_to(b):
        return "is inside"
    if b.is_relative_to(a):
        return "contains"
    return None


def check_folders(reader: Reader, root: Path, site: SiteConfig, theme: ThemeConfig, given: Iterable[str]) -> None:
    """The folders listlib manages must not overlap: ``build --clean`` empties the output
    folder, the build sweeps it and clears the cache, so an output folder inside the store
    or the queue would delete mail (an error naming both paths, never a silent loss).
    Each problem is reported under the key the configuration sets (``given``)."""
    assert site.queue_dir is not None
    managed = [
        ("output_dir", "output folder", site.output_dir),
        ("content_dir", "content folder (the store)", site.content_dir),
        ("queue_dir", "delivery queue", site.queue_dir),
        ("cache_dir", "cache folder", site.cache_dir),
    ]
    given = set(given)
    for index, first in enumerate(managed):
        for second in managed[index + 1 :]:
            subject, other = (second, first) if second[0] in given and first[0] not in given else (first, second)
            how = _overlap(subject[2], other[2])
            if how:
                reader.issues.append(
                    ConfigIssue(f"site.{subject[0]}", f"{subject[2]} {how} the {other[1]} {other[2]}: keep them apart")
                )
    output = site.output_dir
    themes = [("theme folder", root / "themes")] + ([("theme.dir folder", theme.dir)] if theme.dir else [])
    for what, folder in themes:
        how = _overlap(output, folder)
        if how:
            reader.issues.append(
                ConfigIssue("site.output_dir", f"{output} {how} the {what} {folder}: builds would delete it")
            )
    if root.is_relative_to(output):
        reader.issues.append(
            ConfigIssue(
                "site.output_dir",
                f"{output} contains listlib.toml's folder {root}: 'listlib build --clean' would empty it",
            )
        )
