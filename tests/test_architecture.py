"""Imports point one way (STYLE.md): lower layers never import higher ones, and
third-party libraries stay in the one module that is theirs."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "listlib"

LAYERS = [
    {"errors", "values", "charsets", "controls", "heap", "codedigest", "forkpool", "signals", "pathlog"},
    {"message", "dating", "config", "fsutil", "sqlbulk", "sqlfile", "store.index", "threader", "threadcache", "urls"}
    | {"theme", "plan", "plan.jobs", "plan.kinds", "plan.paging", "search", "search.analysis", "search.codec"}
    | {"config.schema", "config.secret", "config.reader", "config.checks", "config.site", "config.lists"}
    | {"config.pop3", "config.imap", "config.smtp", "config.publish", "config.folders", "config.load"}
    | {"legacy", "legacy.mapfile", "legacy.hyperkitty", "patchsubject", "translation", "classify"}
    | {"config.classes", "series", "trailers", "threadbatch"},
    {
        "routing",
        "dedup",
        "store.layout",
        "store.batch",
        "store.ledger",
        "overrides",
        "filers",
        "filers.compressed",
        "filers.mbox",
        "filers.pop3",
        "filers.imap",
        "remote",
        "filers.publicinbox",
        "filers.inboxgit",
        "uidls",
        "inboxlog",
        "plan.sources",
        "plan.series",
        "plan.shown",
        "classcache",
    }
    | {"plan.state", "display", "display.model", "display.mime", "display.walk", "display.textbody"}
    | {"display.sanitize", "display.attachments", "display.diff"}
    | {
        "delivery",
        "delivery.damage",
        "delivery.queue",
        "delivery.compose",
        "delivery.policy",
        "delivery.bounce",
        "delivery.transport",
    }
    | {"search.query", "search.segment", "search.merge", "search.purge", "search.reader", "search.state", "search.bulk"}
    | {"search.document", "search.spool", "search.hints", "search.writer", "search.spill", "search.bulkpurge"}
    | {"legacy.mhonarc", "legacy.pipermail"},
    {
        "plan.builders",
        "threadset",
        "plan.stored",
        "plan.storedseries",
        "plan.incremental",
        "plan.full",
        "render",
        "render.writer",
        "render.downloads",
        "render.pages",
    }
    | {"render.runner", "render.cluster", "delivery.runner", "delivery.service", "threadview", "seriesview"}
    | {"store", "store.core", "store.pipeline", "store.refile"},
    {
        "filing",
        "verify",
        "skeleton",
        "fetch",
        "watch",
        "search.update",
        "build",
        "serve",
        "serve_http",
        "delivery.intake",
    }
    | {"unrouted", "manifest", "stewardship", "threadedit", "legacy.importer", "upstream"}
    | {"publish", "publish.plan", "publish.shards", "publish.local", "publish.s3", "publish.run", "mailman3"},
    {"cli", "cli.common", "cli.hooks", "cli.init", "cli.import_", "cli.build", "cli.serve", "cli.search", "cli.fetch"}
    | {"cli.check", "cli.unrouted", "cli.threads", "cli.deliver", "cli.bounces", "cli.steward", "cli.legacy"}
    | {"cli.publish", "cli.watch", "cli.series"}
    | {"__main__"},
]
ONLY_IN = {
    "sqlite3": {"sqlbulk", "sqlfile", "threadcache", "threadset", "plan.state", "search.state"}
    | {"store.index", "store.core"},
    "jinja2": {"theme"},
    "markdown": {"render.pages"},
    "nh3": {"display.sanitize"},
    "poplib": {"filers.pop3"},
    "imaplib": {"filers.imap"},
    "watchfiles": {"serve"},
    "smtplib": {"delivery.transport"},
    "aiosmtpd": set(),
    "numpy": {"search.bulk", "search.bulkpurge", "search.spill"},
    "multiprocessing": {"forkpool"},
    "boto3": {"publish.s3"},
    "mailman": {"mailman3"},
    "zope": {"mailman3"},
    "botocore": {"publish.s3"},
    "distributed": {"render.cluster"},
    "dask": set(),
}
CONFIG_ORDER = [
    "config.schema",
    "config.secret",
    "config.reader",
    "config.checks",
    "config.site",
    "config.lists",
    "config.pop3",
    "config.imap",
    "config.smtp",
    "config.publish",
    "config.folders",
    "config.classes",
    "config.load",
    "config",
]
"""The modules of the config package, lowest first: each imports only those before it
(the package's ``__init__`` comes last: it only re-exports, and none of them imports it)."""
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


def test_config_modules_import_one_way() -> None:
    for path in sorted((PACKAGE / "config").glob("*.py")):
        name = module_name(path)
        assert name in CONFIG_ORDER, f"{name} is not in CONFIG_ORDER; add it"
        for target in imports_of(path):
            if target == "config" or target.startswith("config."):
                assert CONFIG_ORDER.index(target) < CONFIG_ORDER.index(name), f"{name} imports {target}, a later module"


NEVER = {
    "render": ("search", "build", "plan.builders", "plan.incremental", "plan.state", "plan.stored"),
    "plan": ("render", "search", "build", "filing"),
    "display": ("render", "plan", "search", "store"),
    "urls": ("render", "plan", "display"),
}
"""Package (or module) -> what it must never import, whatever the layers allow: the
renderer knows neither the search index (it hands displayed text to a callback) nor
how jobs are planned (only their records); planning never renders or writes output."""


def test_packages_keep_out_of_what_is_not_theirs() -> None:
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        for owner, forbidden in NEVER.items():
            if name != owner and not name.startswith(owner + "."):
                continue
            for target in imports_of(path):
                for banned in forbidden:
                    assert target != banned and not target.startswith(banned + "."), f"{name} imports {target}"


DELIVERY_OBJECTS = {"Outbound", "Intake", "Runner", "SmtpSession", "BounceLog"}


def test_commands_leave_building_delivery_objects_to_the_delivery_package() -> None:
    # Issue 24: a command parses options, calls a click-free function and prints what
    # it returns; opening queues and SMTP sessions belongs to listlib.delivery (the
    # commands may still name these classes in type hints).
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
                called = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                assert called not in DELIVERY_OBJECTS, f"{path.name}:{node.lineno} builds a {called}"


def loaded_modules(code: str) -> set[str]:
    """The modules loaded by a fresh interpreter after running ``code``."""
    result = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    return set(result.stdout.split())


def test_starting_the_command_line_loads_no_delivery_module() -> None:
    # Cron runs 'listlib build' and 'listlib fetch' every few minutes: delivery (and
    # smtplib) is imported by the commands that use it, when they run.
    loaded = loaded_modules("import listlib.cli")
    assert not {name for name in loaded if name.startswith("listlib.delivery") or name == "smtplib"}


def test_the_delivery_package_runs_without_click() -> None:
    loaded = loaded_modules(
        "import listlib.delivery.service, listlib.delivery.intake, listlib.delivery.bounce, listlib.delivery.runner"
    )
    assert "listlib.delivery.service" in loaded and "click" not in loaded


def test_starting_the_command_line_loads_no_s3_client() -> None:
    # boto3 takes ~0.3 s to load and is an optional extra: only 'listlib publish' loads it.
    loaded = loaded_modules("import listlib.cli, listlib.publish.plan")
    assert not {name for name in loaded if name.split(".")[0] in {"boto3", "botocore", "s3transfer"}}


LONG_MODULE = 500  # lines; a module past this says why in its docstring


def test_a_long_module_says_why_it_is_long() -> None:
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if text.count("\n") > LONG_MODULE and "\nLength: " not in "\n" + docstring:
            unexplained.append(f"{path.relative_to(PACKAGE)} ({text.count(chr(10))} lines)")
    assert not unexplained, "modules over 500 lines with no 'Length:' reason: " + ", ".join(unexplained)
