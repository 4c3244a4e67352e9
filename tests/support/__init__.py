"""Servers and helpers the tests share: real Dovecot, SMTP, web and dev servers, Chromium,
the hostile corpus, link and display checks, and the plain helpers (messages, mboxes,
the CLI as a subprocess) in ``helpers.py``."""
