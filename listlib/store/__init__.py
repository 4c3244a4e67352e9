"""The call-numbered store in content/: durable filing, dedup, recovery, checking.

Layout::

    content/<slug>/<yyyy>/<mm>/<call>.eml    a message, byte-for-byte as received
    content/<slug>/<yyyy>/<mm>/<call>.json   only when its date did not come from
                                             its Date header (which date, from where)
    content/_no_list/<yyyy>/<mm>/<call>.eml  mail that matched no list
    content/_failed/<call>.eml + .json       mail that could not be filed, with the reason
    content/.index/index.sqlite              derived index (rebuilt from the files at will)
    content/.tmp/                            temporary files; only written under the lock
    content/.lock                            the store lock

A batch is filed under the store lock in this order: temporary files written;
index rows inserted as *pending* and committed; both made durable (one
``syncfs`` of the file system where Linux has it); files renamed into place and
their folders synced; rows marked *filed* and committed. An import's
``Pipeline`` runs the steps after the pending commit in a thread of its own
while the next batch is decided. Whoever
takes the lock next resolves pending rows by looking at the files, and removes
temporary files (no process holds one outside the lock). So a kill at any
instant loses nothing and files nothing twice. ``refile`` moves messages
between lists (``listlib unrouted --refile``) on top of that scheme: a journal of
the old copies is committed, the new copies are filed as a batch, then the old
ones are removed; the next lock holder finishes a journal a kill left.

The modules: ``core`` (the ``Store``: lock, recovery, call numbers, the two halves of
filing a batch, index rebuild), ``batch`` (what a batch decides: dedup, outcomes),
``pipeline`` (a decided batch's files on their way into place, and ``Pipeline``),
``refile``, ``index`` (the SQLite index) and ``layout`` (where files live, and the row
a file makes). This package never parses sources and never prints.

Importing the package imports none of its modules (import ``store.core.Store`` and the
rest from their modules): the index and the row layout are read by the planner and the
renderer, which must neither load nor depend on the filing code (their code digests
follow their imports).
"""
