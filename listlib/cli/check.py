"""``listlib check``: verify (and with --repair, repair) the store."""

from __future__ import annotations

import sys

import click

from ..values import plural
from .common import (
    Context,
    common_options,
    echo,
    echo_json,
    handle_errors,
)


@click.command()
@click.option("--repair", is_flag=True, help="Rebuild the index from the files and remove leftovers.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@common_options()
@click.pass_obj
@handle_errors
def check(obj: Context, repair: bool, as_json: bool) -> None:
    """Verify the store: every file indexed, every index row backed by a file,
    call numbers unique, no leftover temporary files, every file readable; the
    index agrees with the ledger, no hidden message is still in output/, the
    thread overrides (content/threads.toml) name known messages, without loops,
    and the legacy redirect maps (content/<slug>/legacy.tsv) are there and name
    known messages.

    Exits 1 when there are problems. With --repair, rebuilds the index from
    the files (the files are the truth) and removes leftovers, then checks again.
    """
    from ..legacy.importer import legacy_problems
    from ..overrides import overrides_problems
    from ..stewardship import published_hidden
    from ..store.core import Store
    from ..verify import check_store, repair_store

    config = obj.load()
    with Store(config.site.content_dir).open(discard_damaged_index=repair) as store:
        actions = repair_store(store) if repair else []
        report = check_store(store)
        _, bad_overrides = overrides_problems(store.root, store.index, [lst.slug for lst in config.lists])
        report.problems.extend(bad_overrides)
        report.problems.extend(legacy_problems(config, store))
    report.problems.extend(published_hidden(config))
    if as_json:
        echo_json(
            {
                "ok": report.ok,
                "messages": report.messages,
                "problems": report.problems,
                "leftovers": report.leftovers,
                "repaired": actions,
            },
            indent=2,
        )
    else:
        for action in actions:
            echo(action)
        for line in report.problems + report.leftovers:
            echo(f"problem: {line}", err=True)
        verdict = "clean" if report.ok else plural(len(report.problems) + len(report.leftovers), "problem")
        echo(f"{plural(report.messages, 'message')} in {config.site.content_dir}: {verdict}")
    if not report.ok:
        sys.exit(1)
