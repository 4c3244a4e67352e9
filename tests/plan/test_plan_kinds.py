"""The registry of page kinds is whole: every kind names a builder and a renderer that
exist, every renderer is registered, every job's arguments are its kind's record, and
the code that plans and renders spells no output path itself (``urls`` does)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from listlib.build import compare_plans
from listlib.config import load_config
from listlib.plan.builders import SiteJobs
from listlib.plan.jobs import job_id
from listlib.plan.kinds import KINDS, TEMPLATES
from listlib.render.pages import Renderer

from ..build.test_build import add, post

PACKAGE = Path(__file__).resolve().parents[2] / "listlib"


def test_every_kind_names_a_builder_and_a_renderer_that_exist() -> None:
    for name, kind in KINDS.items():
        assert kind.name == name
        assert callable(getattr(SiteJobs, kind.builder, None)), f"{name}: no SiteJobs.{kind.builder}"
        assert callable(getattr(Renderer, kind.renderer, None)), f"{name}: no Renderer.{kind.renderer}"
        assert TEMPLATES[name] == kind.templates


def test_every_renderer_is_registered() -> None:
    renderers = {name for name, _ in inspect.getmembers(Renderer, inspect.isfunction) if name.startswith("render_")}
    assert renderers == {kind.renderer for kind in KINDS.values()}


def test_every_template_of_a_kind_is_in_the_default_theme() -> None:
    templates = PACKAGE / "themes" / "default" / "templates"
    for kind in KINDS.values():
        for template in kind.templates:
            assert (templates / template).is_file(), f"{kind.name}: {template} is not a default template"


def test_job_ids_name_the_kind_and_what_it_is_of() -> None:
    from listlib.values import Month

    assert job_id("thread", "dev", "0Abc12Xy") == "thread:dev:0Abc12Xy"
    assert job_id("month", "dev", Month(2024, 5)) == "month:dev:2024-05"
    assert job_id("sitemap", "dev", Month(2024, 5), 2) == "sitemap:dev:2024-05:2"


def test_every_job_of_a_site_carries_its_kinds_record(site: Path) -> None:
    from listlib.legacy.importer import import_legacy

    with (site / "listlib.toml").open("a") as toml:  # an old archive, for the legacy kinds
        toml.write('\n[lists.dev.legacy]\nkind = "hyperkitty"\npath = "hyperkitty"\n')
    add(site, post(1, "Hello"), post(2, "Re: Hello", reply_to=1), post(3, "Other"))
    import_legacy(load_config(site / "listlib.toml"))
    _incremental, full = compare_plans(load_config(site / "listlib.toml"))
    kinds_seen = set()
    for job in full.run:
        assert job.id.startswith(job.kind + ":")
        assert isinstance(job.args, KINDS[job.kind].record), job.id
        kinds_seen.add(job.kind)
    assert kinds_seen == set(KINDS)


def _spelled_paths(path: Path) -> list[str]:
    """f-strings and concatenations in a module that make an output file's path."""
    found = []
    suffixes = (".html", ".eml", ".mbox.gz", ".atom", ".xml", ".txt")
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            text = "".join(
                side.value
                for side in (node.left, node.right)
                if isinstance(side, ast.Constant) and isinstance(side.value, str)
            )
        else:
            continue
        if text.endswith(suffixes) or any(text.startswith(f"{root}/") for root in ("static", "mid", "search")):
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_only_urls_spells_an_output_path() -> None:
    modules = [PACKAGE / "build.py", PACKAGE / "manifest.py", *PACKAGE.glob("plan/*.py"), *PACKAGE.glob("render/*.py")]
    spelled = [line for module in modules for line in _spelled_paths(module)]
    assert spelled == []


def test_templates_link_site_wide_pages_through_paths() -> None:
    templates = PACKAGE / "themes" / "default" / "templates"
    for template in templates.iterdir():
        text = template.read_text()
        for spelled in ("'index.html'", "'search/index.html'", "'static/", "~ '/index.html'", "'sitemap.xml'"):
            assert spelled not in text, f"{template.name} spells {spelled}; use paths"


def test_per_message_items_have_the_layouts_kinds_names(site: Path) -> None:
    from listlib.plan import kinds

    add(site, post(1, "Hello"), post(2, "Re: Hello", reply_to=1), post(3, "Other"))
    _incremental, full = compare_plans(load_config(site / "listlib.toml"))
    layouts = {
        "thread": [("messages", kinds.THREAD_MESSAGE_FIELDS)],
        "tmbox": [("messages", kinds.MBOX_ITEM_FIELDS)],
        "mmbox": [("messages", kinds.MBOX_ITEM_FIELDS)],
        "messages": [("messages", kinds.MESSAGE_COPY_FIELDS)],
        "month": [("threads", kinds.MONTH_THREAD_FIELDS)],
        "date": [("messages", kinds.DATED_MESSAGE_FIELDS)],
        "sitemap": [("pages", kinds.SITEMAP_ENTRY_FIELDS)],
    }
    seen = set()
    for job in full.run:
        for field, names in layouts.get(job.kind, []):
            items = getattr(job.args, field)
            assert items and all(type(item) is tuple and len(item) == len(names) for item in items), job.id
            seen.add(job.kind)
        if job.kind == "mid":
            for group in job.args.entries:
                assert all(len(entry) == len(kinds.MID_ENTRY_FIELDS) for entry in group.entries)
                seen.add("mid")
    assert seen == set(layouts) | {"mid"}
