"""The build's own record of output/: every file it owns, with its digest and size.

Read from the records the build and the search index keep as they write (the build
state's files, the search state's files), never by walking output/: files someone else
put there (a host's ``CNAME``) are not in it, and nothing is hashed again. Publishing
and take-downs read it. Never writes anything.

The symbolic links of ``[site] message_id_paths`` (``<list>/<Message-ID>/raw`` and
``t.mbox.gz``) are in it too, each with ``render.writer.link_digest`` of its target and
the target's length as its size: a publisher tells them by ``os.path.islink`` and makes
each a redirect to ``os.readlink``'s target (S3's ``x-amz-website-redirect-location``)
rather than uploading a copy of what it leads to.
"""

from __future__ import annotations

from .config import Config
from .errors import BuildError
from .fsutil import release_lock
from .plan.state import BuildState, lock_output
from .search.state import SearchState
from .urls import SEARCH_DIR

__all__ = ["load_manifest", "manifest_stamp"]


def load_manifest(config: Config, *, locked: bool = False) -> dict[str, tuple[str, int]]:
    """Path under output/ -> (blake2b-128 hex digest of its bytes, size) of every file
    the last build made, the search index's included. Waits for a running build, unless
    the caller holds the build lock (``locked``)."""
    cache = config.site.cache_dir
    lock = None if locked else lock_output(cache)
    try:
        files: dict[str, tuple[str, int]] = {}
        with BuildState(cache / "build.sqlite") as state:
            _check_finished(config, state)
            for path, digest, size in state.manifest():
                if not digest or size is None:
                    raise BuildError(f"{config.site.output_dir}/{path}: not made again since it was found damaged")
                files[path] = (digest, size)
        search = SearchState(cache / "search.sqlite")
        try:
            for path, (digest, size, _mtime) in search.files().items():
                files[f"{SEARCH_DIR}/{path}"] = (digest, size)
        finally:
            search.close()
    finally:
        if lock is not None:
            release_lock(lock)
    return files


def manifest_stamp(config: Config) -> str | None:
    """A token for the manifest as it stands, which changes whenever the build or the
    search index records a file written, removed or found damaged: the same token, the
    same ``load_manifest``, read in milliseconds where the manifest of a large site takes
    most of a second. None while either record has no token. The caller holds the build
    lock (a build running beside it could change the files between the two reads)."""
    cache = config.site.cache_dir
    with BuildState(cache / "build.sqlite") as state:
        _check_finished(config, state)
        built = state.files_stamp()
    search = SearchState(cache / "search.sqlite")
    try:
        # No token and no files: a site built without search (or an old index of no files).
        indexed = search.files_stamp() or (None if search.has_files() else "none")
    finally:
        search.close()
    return None if built is None or indexed is None else f"{built}/{indexed}"


def _check_finished(config: Config, state: BuildState) -> None:
    if state.get("running") is not None:
        raise BuildError(f"{config.site.output_dir}: the last build did not finish; run 'listlib build'")
