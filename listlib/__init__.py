"""listlib: a static-site generator for mailing-list archives.

Importing this package is cheap: it imports no submodules.
"""

__version__ = "0.1.0"
