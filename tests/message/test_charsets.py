from hypothesis import given
from hypothesis import strategies as st

from listlib.charsets import decode_bytes, resolve_charset


def test_latin1_label_on_windows_1252_bytes_gives_curly_quotes() -> None:
    assert decode_bytes(b"\x93quoted\x94 caf\xe9", "iso-8859-1") == "\u201cquoted\u201d caf\u00e9"


def test_latin_labels_on_utf8_bytes_give_utf8() -> None:
    data = "Gr\u00fc\u00dfe".encode()
    assert decode_bytes(data, "iso-8859-1") == "Gr\u00fc\u00dfe"
    assert decode_bytes(data, "us-ascii") == "Gr\u00fc\u00dfe"


def test_unlabelled_8bit_tries_utf8_then_cp1252() -> None:
    assert decode_bytes("na\u00efve".encode(), None) == "na\u00efve"
    assert decode_bytes(b"na\xefve", None) == "na\u00efve"


def test_bogus_labels_are_treated_as_unlabelled() -> None:
    for label in ("y", "x-unknown", "non-existing-codec", "unknown-8bit", '"', "zlib", "rot13", "unicode_escape"):
        assert resolve_charset(label) is None, label
        assert decode_bytes(b"caf\xe9 \\u0041", label) == "caf\u00e9 \\u0041"


def test_utf8_label_with_a_few_broken_bytes_keeps_the_utf8() -> None:
    assert decode_bytes("\u00fcber ".encode() * 5 + b"\xff", "utf-8") == "\u00fcber " * 5 + "\ufffd"


def test_utf8_label_on_latin1_text_falls_back_to_cp1252() -> None:
    assert decode_bytes(b"Fran\xe7ois d\xe9j\xe0", "utf-8") == "Fran\u00e7ois d\u00e9j\u00e0"


def test_narrow_labels_are_widened_to_what_senders_really_use() -> None:
    assert resolve_charset("gb2312") == "gb18030"
    assert resolve_charset("KS_C_5601-1987") == "cp949"
    assert decode_bytes("\u4e2d\u6587\u20ac".encode("gb18030"), "gb2312") == "\u4e2d\u6587\u20ac"


def test_seven_bit_charsets_are_not_mistaken_for_ascii() -> None:
    assert decode_bytes("\u65e5\u672c".encode("iso2022_jp"), "iso-2022-jp") == "\u65e5\u672c"
    assert decode_bytes(b"+ZeVnLA-", "utf-7") == "\u65e5\u672c"


def test_utf7_lone_surrogates_are_replaced() -> None:
    assert decode_bytes(b"a +2AA- b", "utf-7") == "a \ufffd b"


@given(st.binary(max_size=200), st.sampled_from([None, "utf-8", "iso-8859-1", "utf-7", "utf-16", "gbk", "y", "koi8-r"]))
def test_decoding_never_raises_and_always_gives_writable_text(data: bytes, label: str | None) -> None:
    decode_bytes(data, label).encode("utf-8")
