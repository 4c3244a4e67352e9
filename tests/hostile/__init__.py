"""Hostile mail for tests: payload builders (attachments, headers) and the checks on what listlib writes from them."""
