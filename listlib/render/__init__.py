"""Rendering: turning jobs (see ``plan``) into output files.

``pages`` renders each kind of job (``Renderer.render_<kind>``, named by the registry
``plan.kinds.KINDS``) with the theme's templates; ``downloads`` makes the gzipped
mboxrd downloads; ``writer`` writes files atomically and only when their bytes change,
and sweeps what no job owns; ``runner`` runs jobs in this process or on forked
workers. Rendering knows nothing of the search index: it hands each message it
displays to a callback the build provides.
"""
