"""Rendering: turning jobs (see ``plan``) into output files.

``writer`` writes files atomically and only when their bytes change; ``context`` holds
what every renderer needs; ``pages`` renders the HTML pages, redirects and feeds with
the theme's templates; ``downloads`` makes mboxrd downloads and raw copies.
"""
