"""Delivery: forward posts accepted for a list to its subscribers, crash-safely.

The pieces, lowest first:

- ``queue``: the on-disk outbound queue (stages new / retry / failed / held, a
  post folder per message, an append-only journal of per-recipient outcomes);
- ``compose``: the bytes to send (List-* and Archived-At headers prepended to the
  stored bytes, which are otherwise untouched); pure;
- ``policy``: who may post, loop detection, who receives a post; pure;
- ``bounce``: VERP encoding and decoding, recognising bounces, the bounce record;
- ``transport``: one SMTP session (the only user of smtplib);
- ``intake``: turns freshly filed messages into queued posts (called by filing);
  ``open_intake`` makes that hook from a site's config;
- ``runner``: ``listlib deliver``: new posts first, then due retries, with backoff;
- ``service``: what ``listlib deliver`` calls: a site's config in, a delivery
  run's report or the queue's listing out.

Two rules from Mailman: no post is ever lost, and a recipient whose delivery is
recorded as done is never sent the post again.
"""
