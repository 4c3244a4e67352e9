"""The site's URL scheme: relative links resolve to their target from any page, and
the paths that make up permanent URLs do not change."""

from __future__ import annotations

import hashlib
import posixpath
from urllib.parse import unquote

from hypothesis import given
from hypothesis import strategies as st

from listlib.urls import message_id_path, message_path, relative_url
from listlib.values import Month

segment = st.text(alphabet="abcxyz019-_. é", min_size=1, max_size=6).filter(lambda s: s not in (".", ".."))
path = st.lists(segment, min_size=1, max_size=5).map("/".join)


@given(path, path)
def test_a_relative_link_resolves_to_its_target_from_any_page(from_path: str, to_path: str) -> None:
    link = relative_url(from_path, to_path)
    assert "#" not in link
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), unquote(link)))
    assert resolved == posixpath.normpath(to_path)


def test_fragments_are_kept_and_an_empty_target_means_this_page() -> None:
    assert relative_url("dev/2024/05/AAAAAAAA.html", "dev/2024/05/BBBBBBBB.html#CCCCCCCC") == "BBBBBBBB.html#CCCCCCCC"
    assert relative_url("dev/2024/05/AAAAAAAA.html", "#x") == "AAAAAAAA.html#x"
    assert relative_url("index.html", "dev/index.html") == "dev/index.html"
    assert relative_url("dev/2024/05/index.html", "static/style.css") == "../../../static/style.css"


def test_permanent_paths_are_what_the_readme_promises() -> None:
    assert message_path("dev", Month(2024, 5), "0Abc12Xy") == "dev/2024/05/0Abc12Xy.html"
    digest = hashlib.sha256(b"m1@example.org").hexdigest()
    assert message_id_path("<m1@example.org>") == f"mid/{digest[:2]}/{digest[2:]}.html"
    assert message_id_path("m1@example.org") == message_id_path("<m1@example.org>")
