"""The render workers a build forks ahead of its plan (``JobRunner.start``)."""

from __future__ import annotations

import gc
from pathlib import Path

from listlib.build import _load_theme
from listlib.config import load_config
from listlib.render.runner import JobRunner


def test_workers_forked_ahead_of_the_plan_leave_the_planners_objects_frozen_until_they_stop(site: Path) -> None:
    """The planning process's collections must not touch (and so copy) the pages it
    shares with the workers: its objects are frozen while they run, and collected again after."""
    config = load_config(site / "listlib.toml")
    assert gc.get_freeze_count() == 0
    with JobRunner(_load_theme(config), config.site.content_dir, config.site.output_dir, 2) as runner:
        runner.start()
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
