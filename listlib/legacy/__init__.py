"""Moving an archive to listlib without breaking its old links.

A list's old archive (MHonArc, HyperKitty, Pipermail) is named by its
``[lists.<slug>.legacy]`` table. ``listlib legacy import`` maps each old URL to a stored
message (or to a month or list page) once, and writes the map into the store
(``mapfile``); every build then turns the map into static redirect pages and server
redirect maps (``plan.builders``, ``render.pages``).

- ``mapfile``: the map's file format, read and written; pure;
- ``hyperkitty``: HyperKitty's URLs, computed from Message-IDs alone; pure;
- ``mhonarc``: MHonArc's pages, matched by the Message-ID each one records;
- ``pipermail``: Pipermail's pages, matched by what each one shows of its message;
- ``importer``: reads the old archive and the store, writes the map, reports what
  could not be matched.
"""
