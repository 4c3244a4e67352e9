from pathlib import Path

import pytest

from listlib.config import find_config, load_config
from listlib.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "listlib.toml"
    path.write_text(text)
    return path


def test_valid_config_loads_into_frozen_objects(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            """
[site]
title = "Archive"
base_url = "https://lists.example.org/archive"
content_dir = "store"

[lists.dev]
name = "Developers"
description = "Dev talk"
addresses = ["Dev@Lists.Example.org"]
list_ids = ["<dev.lists.example.org>"]
""",
        )
    )
    assert config.site.base_url == "https://lists.example.org/archive/"
    assert config.site.content_dir == tmp_path.resolve() / "store"
    assert config.site.output_dir == tmp_path.resolve() / "output"
    dev = config.get_list("dev")
    assert dev is not None and dev.addresses == ("dev@lists.example.org",)
    assert dev.list_ids == ("dev.lists.example.org",)
    with pytest.raises(AttributeError):
        config.site.title = "x"  # type: ignore[misc]


def test_every_problem_is_reported_with_its_key_path(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[site]
base_url = "lists.example.org"

[lists.dev]
addresses = ["dev@lists.example.org", "dev"]
list_ids = [42]

[lists.Bad_Slug]
addresses = "nobody@example.org"

[lists.other]
addresses = ["dev@lists.example.org"]
""",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    messages = [str(issue) for issue in info.value.issues]
    assert "lists.dev.addresses[1]: 'dev' is not an email address" in messages
    assert "site.title: is required" in messages
    assert "site.base_url: 'lists.example.org' is not an absolute http(s) URL" in messages
    assert "lists.dev.list_ids[0]: expected a string, got an integer" in messages
    assert any(m.startswith("lists.Bad_Slug: 'Bad_Slug' is not a list slug") for m in messages)
    assert "lists.other.addresses[0]: 'dev@lists.example.org' is also used by list 'dev'" in messages
    assert str(path) in str(info.value)


def test_unknown_keys_warn_but_load(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            """
outptu_dir = "x"
[site]
title = "A"
base_url = "https://a.example/"
colour = "blue"
[lists.dev]
adresses = ["x@example.org"]
""",
        )
    )
    assert set(config.warnings) == {
        "outptu_dir: unknown key, ignored",
        "site.colour: unknown key, ignored",
        "lists.dev.adresses: unknown key, ignored",
    }


def test_syntax_error_and_missing_file_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="TOML syntax error"):
        load_config(write(tmp_path, "[site\ntitle = 1"))
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.toml")


def test_output_must_not_contain_content(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"site\.output_dir"):
        load_config(
            write(
                tmp_path,
                """
[site]
title = "A"
base_url = "https://a.example/"
output_dir = "out"
content_dir = "out/content"
""",
            )
        )


def test_cache_defaults_beside_the_config_and_must_not_be_published(tmp_path: Path) -> None:
    base = '[site]\ntitle = "A"\nbase_url = "https://a.example/"\n'
    assert load_config(write(tmp_path, base)).site.cache_dir == tmp_path.resolve() / ".cache"
    with pytest.raises(ConfigError, match=r"site\.cache_dir: must not be inside the output folder"):
        load_config(write(tmp_path, base + 'cache_dir = "output/cache"\n'))


def test_find_config_walks_up(tmp_path: Path) -> None:
    path = write(tmp_path, "")
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    assert find_config(nested) == path.resolve()
