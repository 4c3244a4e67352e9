"""Planning a build: what pages the site has and which of them a build must make.

- ``kinds``: the kinds of page, each with the typed record of its jobs' arguments, its
  templates, builder and renderer (the registry);
- ``jobs``: a job, its name (``job_id``) and key (``job_key``), and the plan that
  compares this build's jobs with the last build's (``plan_build``);
- ``sources``, ``stored``: a list's rows and threads as the builders read them, held
  in memory (a full build) or asked of the databases (an incremental build);
- ``builders``: one builder per kind, describing its jobs (``SiteJobs``); ``shown``:
  how index pages show subjects, senders and participants;
- ``incremental``: from what changed since the last complete build, which jobs a
  build must look at (``dirty_jobs``), and what it leaves for the next (``Memory``);
- ``state``: the build records (``BuildState``): every job's key, every output file's
  owner, digest and stat.

Pure apart from ``state`` and ``stored``, which read (and ``state`` writes) the cache's
SQLite files. Never renders and never touches output/.
"""
