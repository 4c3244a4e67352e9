import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from listlib.fsutil import read_file, write_all, write_file


@pytest.mark.parametrize("size", [0, 1, 4096, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3 * (1 << 20) + 17])
def test_read_file_returns_every_byte_of_files_of_any_size(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    path = tmp_path / "f"
    path.write_bytes(data)
    assert read_file(path) == data
    assert read_file(str(path)) == data


def test_read_file_of_a_missing_path_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_file(tmp_path / "missing")


@settings(max_examples=30)
@given(st.binary(max_size=200_000))
def test_write_all_through_a_pipe_writes_everything_even_in_pieces(data: bytes) -> None:
    # A pipe takes 64 KiB at most per write: larger data needs several os.write calls.
    reader, writer = os.pipe()
    os.set_blocking(writer, True)
    received = bytearray()

    def drain() -> None:
        while chunk := os.read(reader, 1 << 16):
            received.extend(chunk)

    thread = threading.Thread(target=drain)
    thread.start()
    try:
        write_all(writer, data)
    finally:
        os.close(writer)
        thread.join()
        os.close(reader)
    assert bytes(received) == data


def test_write_file_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "f"
    write_file(path, b"first", sync=False)
    with pytest.raises(FileExistsError):
        write_file(path, b"second", sync=True)
    assert read_file(path) == b"first"
