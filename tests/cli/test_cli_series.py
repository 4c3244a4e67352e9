"""``listlib series``: the archive's patch series with versions, patches and trailers."""

from __future__ import annotations

import json
from pathlib import Path

from ..build.test_series_pages import V1, V2, review
from ..support.helpers import mboxrd, run_listlib


def import_series(site: Path) -> None:
    replies = [
        review(13, "Re: [PATCH v2 1/2] md: part one", 11, (10, 11), "Reviewed-by: Person 1 <p1@example.org>"),
        review(14, "Re: [PATCH v2 0/2] md: fix the resync", 10, (10,), "Acked-by: Person 2 <p2@example.org>"),
    ]
    (site / "mail.mbox").write_bytes(mboxrd([*V1, *V2, *replies]))
    run_listlib("import", "mail.mbox", cwd=site, check=True)


def test_series_json_lists_versions_patches_and_trailers(site: Path) -> None:
    import_series(site)
    found = json.loads(run_listlib("series", "--json", "--list", "dev", cwd=site, check=True).stdout)["series"]
    assert [(s["label"], s["title"], s["found"], s["total"]) for s in found] == [
        ("v1", "md: fix the resync", 1, 1),
        ("v2", "md: fix the resync", 2, 2),
    ]
    v1, v2 = found
    assert v1["message_id"] == "m1@example.org" and v2["message_id"] == "m10@example.org"
    assert v2["previous_version"] == v1["head"] and v1["next_version"] == v2["head"]
    assert v2["versions"] == [v1["head"], v2["head"]]
    one, two = v2["patches"]
    assert (one["number"], one["message_id"], one["state"]) == (1, "m11@example.org", "reviewed")
    assert sorted(one["trailers"]) == ["Acked-by: Person 2 <p2@example.org>", "Reviewed-by: Person 1 <p1@example.org>"]
    assert two["trailers"] == ["Acked-by: Person 2 <p2@example.org>"]
    assert v2["trailers"] == {"Acked-by": 2, "Reviewed-by": 1}
    assert v1["patches"][0]["state"] == "new"


def test_series_text_names_each_series_and_its_trailers(site: Path) -> None:
    import_series(site)
    out = run_listlib("series", cwd=site, check=True).stdout
    assert "[v2] md: fix the resync  2/2  ann@example.org  (versions:" in out
    assert "         Reviewed-by: Person 1 <p1@example.org>" in out
    assert out.strip().endswith("2 series, 3 patches")


def test_series_of_an_unknown_list_is_a_one_line_error(site: Path) -> None:
    result = run_listlib("series", "--list", "nope", cwd=site)
    assert result.returncode == 2 and "unknown list slug 'nope'" in result.stderr
    assert "Traceback" not in result.stderr
