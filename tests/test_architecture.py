"""Imports point one way (STYLE.md): lower layers never import higher ones, and
third-party libraries stay in the one module that is theirs."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "listlib"

LAYERS = [
    {"errors", "values", "charsets", "controls", "heap", "codedigest", "forkpool"},
    {"message", "dating", "config", "fsutil", "sqlbulk", "sqlfile", "index", "threader", "threadcache", "urls"}
    | {"theme", "plan", "search", "search.analysis", "search.codec"},
    {"routing", "dedup", "layout", "filers", "filers.mbox", "filers.pop3", "uidls", "site"}
    | {"buildstate", "display", "display.model", "display.mime", "display.walk", "display.textbody"}
    | {"display.sanitize", "display.attachments"}
    | {
        "delivery",
        "delivery.damage",
        "delivery.queue",
        "delivery.compose",
        "delivery.policy",
        "delivery.bounce",
        "delivery.transport",
    }
    | {"search.query", "search.segment", "search.merge", "search.reader", "search.state", "search.bulk"}
    | {"search.document", "search.spool"},
    {"store", "threadset", "sitedata", "dirty", "render", "render.writer", "render.downloads", "render.pages"}
    | {"render.runner", "delivery.runner", "threadview"},
    {"filing", "verify", "skeleton", "fetch", "search.update", "build", "serve", "serve_http", "delivery.intake"}
    | {"unrouted", "manifest"},
    {"cli", "cli.common", "cli.hooks", "cli.init", "cli.import_", "cli.build", "cli.serve", "cli.search", "cli.fetch"}
    | {"cli.check", "cli.unrouted", "cli.threads", "cli.deliver", "cli.bounces", "__main__"},
]
ONLY_IN = {
    "sqlite3": {"sqlbulk", "sqlfile", "index", "store", "threadcache", "threadset", "buildstate", "search.state"},
    "jinja2": {"theme"},
    "markdown": {"render.pages"},
    "nh3": {"display.sanitize"},
    "poplib": {"filers.pop3"},
    "watchfiles": {"serve"},
    "smtplib": {"delivery.transport"},
    "aiosmtpd": set(),
    "numpy": {"search.bulk"},
    "multiprocessing": {"forkpool"},
}
CLI_ONLY = {"click"}  # these may be imported by "cli" and its modules "cli.*", and nowhere else


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(parts) or "__init__"


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    package = list(path.relative_to(PACKAGE).parent.parts)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, *(node.module.split(".") if node.module else [])])
                found.add(target or "__init__")
            elif node.module:
                found.add("ext:" + node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update("ext:" + alias.name.split(".")[0] for alias in node.names)
    return found


def layer_of(name: str) -> int:
    for index, layer in enumerate(LAYERS):
        if name in layer:
            return index
    raise AssertionError(f"module {name!r} is in no layer; add it to LAYERS")


def test_imports_point_down_the_layers() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        if name == "__init__":
            continue
        for target in imports_of(path):
            if target.startswith("ext:") or target == "__init__":
                continue
            assert layer_of(target) <= layer_of(name), f"{name} imports {target}, a higher layer"


def test_third_party_libraries_stay_in_their_module() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        for target in imports_of(path):
            library = target.removeprefix("ext:")
            if target.startswith("ext:") and library in CLI_ONLY:
                assert name == "cli" or name.startswith("cli."), f"{name} imports {library}"
            elif target.startswith("ext:") and library in ONLY_IN:
                assert name in ONLY_IN[library], f"{name} imports {library}"


def test_every_module_says_its_job() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        assert ast.get_docstring(ast.parse(path.read_text())), f"{path} has no module docstring"
