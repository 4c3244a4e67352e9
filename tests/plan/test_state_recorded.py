"""BuildState.recorded: whether a path is a recorded file, read one folder at a time
(what the sweep after a full build asks, folder after folder)."""

from __future__ import annotations

from pathlib import Path

from listlib.plan.state import BuildState

FILES = ["index.html", "dev/index.html", "dev/2024/03/index.html", "dev/2024/03/a.html", "dev/2024/04/b.html"]


def test_recorded_files_are_found_folder_by_folder(tmp_path: Path) -> None:
    with BuildState(tmp_path / "build.sqlite") as state:
        state.begin()
        state.record_many([("job", "key", dict.fromkeys(FILES, "digest"), {})])
        state.commit()
        recorded = state.recorded()
        for path in [*FILES, *reversed(FILES)]:
            assert path in recorded, path
        for path in ["dev/2024/index.html", "dev/2024/03/b.html", "dev/2024", "dev", "other.html", "dev/2024/03"]:
            assert path not in recorded, path
        assert 3 not in recorded
