"""Static full-text search: the index writer, its reader, and the text analysis both share.

The index lives under ``output/search/`` so the site's JavaScript client (the
default theme's ``static/search.js``) and ``listlib search`` read the same
files. Module map: ``analysis`` (text -> tokens, mirrored by the JS client),
``document`` (a message -> the fields that are indexed), ``codec`` (the binary
postings format), ``segment`` (write one immutable segment), ``bulk`` (invert many
documents at once), ``merge`` (merge segments), ``state`` (the index's own records:
which messages and files it holds), ``spool`` (the text the render pass displayed,
handed to indexing), ``reader`` and ``query`` (answer queries), ``update`` (bring
the index up to date with the message store during a build).
"""

from __future__ import annotations
