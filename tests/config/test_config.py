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
    assert config.site.language == "en"
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


def test_unknown_keys_are_errors_naming_the_nearest_spelling(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(
            write(
                tmp_path,
                """
outptu_dir = "x"
[site]
title = "A"
base_ulr = "https://a.example/"
colour = "blue"
[list.announce]
addresses = ["announce@example.org"]
[lists.dev]
adresses = ["x@example.org"]
[pop3.box]
host = "pop.example.org"
user = "u"
password_env = "P"
kep_on_server = true
[imap.box2]
host = "imap.example.org"
user = "u"
password_env = "P"
foldres = ["INBOX"]
""",
            )
        )
    assert [str(issue) for issue in info.value.issues if "unknown" in issue.message] == [
        "outptu_dir: unknown key (known: build, classes, delivery, imap, lists, pop3, publish, site, smtp, theme)",
        "list: unknown table (did you mean lists?)",
        "site.base_ulr: unknown key (did you mean base_url?)",
        "site.colour: unknown key (known: base_url, cache_dir, content_dir, language, load_remote_images, "
        "message_id_folder, message_id_paths, obfuscate_addresses, output_dir, publish_unrouted, queue_dir, "
        "search_from_disk, show_removal_reasons, title)",
        "lists.dev.adresses: unknown key (did you mean addresses?)",
        "pop3.box.kep_on_server: unknown key (did you mean keep_on_server?)",
        "imap.box2.foldres: unknown key (did you mean folders?)",
    ]
    assert "site.base_url: is required" in str(info.value)


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
    with pytest.raises(ConfigError, match=r"site\.cache_dir: .* is inside the output folder"):
        load_config(write(tmp_path, base + 'cache_dir = "output/cache"\n'))


def test_find_config_walks_up(tmp_path: Path) -> None:
    path = write(tmp_path, "")
    nested = tmp_path / "a" / "b"
    nested.mkdir(parents=True)
    assert find_config(nested) == path.resolve()


SITE = '[site]\ntitle = "A"\nbase_url = "https://a.example/"\n[lists.dev]\naddresses = ["dev@example.org"]\n'


def test_pop3_accounts_load_with_safe_defaults(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            SITE
            + """
[pop3.archive]
host = "pop.example.org"
user = "archive"
password_file = "secrets/pop3"

[pop3.plain]
host = "127.0.0.1"
port = 1110
security = "none"
user = "u"
password_env = "LISTLIB_PASSWORD"
list = "dev"
keep_on_server = true
max_messages = 500
timeout = 5
""",
        )
    )
    archive, plain = config.pop3
    assert (archive.name, archive.port, archive.security, archive.keep_on_server) == ("archive", 995, "ssl", False)
    assert archive.password_file == tmp_path.resolve() / "secrets" / "pop3"
    assert archive.password is None and archive.max_messages is None and archive.timeout == 60.0
    assert (plain.port, plain.security, plain.list, plain.max_messages, plain.timeout) == (1110, "none", "dev", 500, 5)
    assert plain.keep_on_server and plain.password_env == "LISTLIB_PASSWORD"
    assert config.get_account("plain") is plain and config.get_account("nope") is None
    starttls = load_config(write(tmp_path, SITE + '[pop3.s]\nhost="h"\nuser="u"\npassword="p"\nsecurity="starttls"\n'))
    assert starttls.pop3[0].port == 110


def test_a_plain_text_password_is_never_shown_in_reprs(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, SITE + '[pop3.a]\nhost = "h"\nuser = "u"\npassword = "hunter2"\n'))
    assert config.pop3[0].password == "hunter2"
    assert "hunter2" not in repr(config)


def test_every_pop3_problem_is_reported_with_its_key_path(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        SITE
        + """
[pop3]
host = "flat.example.org"

[pop3.bad]
host = "pop example"
port = 70000
security = "tls"
password = "x"
password_env = "1BAD"
list = "nolist"
keep_on_server = "yes"
max_messages = 0
timeout = -1
colour = "red"

[pop3.Upper]
host = "h"
user = "u"
""",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    messages = {str(issue) for issue in info.value.issues}
    assert messages == {
        "pop3.host: expected a table [pop3.<account>], got a string",
        "pop3.bad.host: 'pop example' is not a host name or IP address",
        "pop3.bad.port: must be between 1 and 65535, got 70000",
        "pop3.bad.security: 'tls' is not one of 'ssl', 'starttls', 'none'",
        "pop3.bad.user: is required",
        "pop3.bad: give only one of password, password_env",
        "pop3.bad.password_env: '1BAD' is not an environment variable name",
        "pop3.bad.list: no list 'nolist' in [lists]",
        "pop3.bad.keep_on_server: expected true or false, got a string",
        "pop3.bad.max_messages: must be between 1 and 1000000000, got 0",
        "pop3.bad.timeout: must be more than 0, got -1",
        "pop3.Upper: 'Upper' is not an account name (lower-case letters, digits and dashes)",
        "pop3.Upper: one of password_file, password_env or password is required",
        "pop3.bad.colour: unknown key (known: ca_file, host, keep_on_server, list, max_messages, password, "
        "password_env, password_file, port, security, timeout, user)",
    }


def test_security_none_must_be_chosen_and_an_unused_ca_file_warns(tmp_path: Path) -> None:
    config = load_config(
        write(tmp_path, SITE + '[pop3.a]\nhost="h"\nuser="u"\npassword_env="P"\nsecurity="none"\nca_file="ca.pem"\n')
    )
    assert config.pop3[0].security == "none"
    assert config.warnings == ("pop3.a.ca_file: unused with security = 'none'",)


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ('output_dir = "content/dev"', "content folder"),
        ('output_dir = "content/_failed"', "content folder"),
        ('output_dir = "content/.index"', "content folder"),
        ('output_dir = "content/.pop3"', "content folder"),
        ('output_dir = "queue/new"', "delivery queue"),
        ('output_dir = "themes"', "theme folder"),
        ('output_dir = "themes/site"', "theme folder"),
        ('output_dir = ".cache/x"', "cache folder"),
        ('output_dir = "."', "content folder"),
        ('output_dir = "site-theme"\n[theme]\ndir = "site-theme/over"', "theme.dir folder"),
        ('queue_dir = "content/q"', "content folder"),
        ('cache_dir = "content/.cache"', "content folder"),
        ('content_dir = ".cache/store"', "cache folder"),
    ],
)
def test_managed_folders_that_overlap_are_an_error_naming_both(tmp_path: Path, setting: str, named: str) -> None:
    base = '[site]\ntitle = "A"\nbase_url = "https://a.example/"\n'
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, base + setting + "\n"))
    text = str(caught.value)
    assert named in text
    # Both paths are named, so the user sees which two folders collide.
    assert text.count(str(tmp_path.resolve())) >= 2


def test_separate_folders_anywhere_are_accepted(tmp_path: Path) -> None:
    base = '[site]\ntitle = "A"\nbase_url = "https://a.example/"\n'
    setting = 'output_dir = "public/archive"\ncontent_dir = "data/store"\nqueue_dir = "data/queue"\ncache_dir = "tmp"\n'
    config = load_config(write(tmp_path, base + setting))
    assert config.site.output_dir == tmp_path.resolve() / "public" / "archive"


def test_search_from_disk_is_off_unless_asked(tmp_path: Path) -> None:
    (tmp_path / "listlib.toml").write_text('[site]\ntitle = "x"\nbase_url = "https://x.example/"\n[lists.dev]\n')
    assert load_config(tmp_path / "listlib.toml").site.search_from_disk is False


def test_imap_accounts_load_with_safe_defaults(tmp_path: Path) -> None:
    config = load_config(
        write(
            tmp_path,
            SITE
            + """
[pop3.old]
host = "pop.example.org"
user = "u"
password = "p"

[imap.archive]
host = "imap.example.org"
user = "archive"
password_file = "secrets/imap"

[imap.lists]
host = "127.0.0.1"
security = "starttls"
user = "u"
password_env = "LISTLIB_PASSWORD"
folders = ["INBOX", "Lists/dev list"]
after = "move"
move_to = "Archived"
list = "dev"
max_messages = 100
""",
        )
    )
    archive, lists = config.imap
    assert (archive.port, archive.security, archive.folders, archive.after, archive.move_to) == (
        993,
        "ssl",
        ("INBOX",),
        "delete",
        None,
    )
    assert archive.password_file == tmp_path.resolve() / "secrets" / "imap"
    assert (lists.port, lists.folders, lists.after, lists.move_to, lists.list) == (
        143,
        ("INBOX", "Lists/dev list"),
        "move",
        "Archived",
        "dev",
    )
    assert [a.name for a in config.accounts] == ["old", "archive", "lists"]
    assert config.get_any_account("lists") is lists and config.get_any_account("old") is config.pop3[0]
    assert config.get_any_account("nope") is None


def test_every_imap_problem_is_reported_with_its_key_path(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        SITE
        + """
[pop3.same]
host = "h"
user = "u"
password = "p"

[imap.same]
host = "h"
user = "u"
password = "p"

[imap.bad]
host = "h"
user = "u"
password = "p"
after = "archive"
folders = ["INBOX", "INBOX", "", 3]

[imap.move]
host = "h"
user = "u"
password = "p"
after = "move"

[imap.loop]
host = "h"
user = "u"
password = "p"
after = "move"
move_to = "INBOX"
keep_on_server = true
""",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    messages = {str(issue) for issue in info.value.issues}
    assert messages == {
        "imap.same: 'same' is also a [pop3.same] account; give each its own name",
        "imap.bad.after: 'archive' is not one of 'delete', 'move', 'keep', 'seen'",
        "imap.bad.folders[2]: must not be empty",
        "imap.bad.folders[3]: expected a string, got an integer",
        "imap.bad.folders: names a folder twice",
        'imap.move.move_to: is required with after = "move"',
        "imap.loop.move_to: 'INBOX' is also one of the folders fetched",
        'imap.loop.keep_on_server: is a POP3 key; for IMAP write after = "keep"',
    }


@pytest.mark.parametrize("tag", ["de", "pt-BR", "zh-Hant-TW"])
def test_the_site_language_is_a_language_tag(tmp_path: Path, tag: str) -> None:
    site = f'[site]\ntitle = "A"\nbase_url = "https://a.example/"\nlanguage = "{tag}"\n'
    assert load_config(write(tmp_path, site)).site.language == tag
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, site.replace(tag, tag + " or so")))
    assert [str(i) for i in info.value.issues] == [
        f"site.language: '{tag} or so' is not a language tag such as 'en' or 'de-CH'"
    ]
