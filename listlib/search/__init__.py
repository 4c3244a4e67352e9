"""Static full-text search: the index writer, its reader, and the text analysis both share.

The index lives under ``output/search/`` so the site's JavaScript client (the
default theme's ``static/search.js``) and ``listlib search`` read the same
files. Module map: ``analysis`` (text -> tokens, mirrored by the JS client),
``codec`` (the binary postings format), ``segment`` (write one immutable
segment), ``store`` (read segments and the manifest), ``reader`` (queries),
``update`` (bring the index up to date with the message store during a build).
"""

from __future__ import annotations
