"""Is this message a copy of one already filed? Pure.

Copies of one post come back with small differences: headers added by the
path they took (mbox vs maildir), mbox ``>From`` quoting, charset damage, or
Mailman's scrubber rewriting its notices when an archive is regenerated (the
twisted-python Pipermail archive holds every message twice, differing in just
these ways). Two messages with the same Message-ID are one post when sender and
subject agree and the words of their bodies mostly agree; otherwise the second
is a different message that reuses the Message-ID (a *collision*) and is kept.
Old Pipermail archives also cut messages short at unescaped "From " lines, so
a copy whose words are almost all contained in the other is the same post too.
"""

from __future__ import annotations

from .message import MessageFacts, body_tokens, skeleton, split_message

__all__ = ["CONTAINMENT", "SIMILARITY", "is_same_post"]

#: Share of body words two copies of one post must have in common.
SIMILARITY = 0.5
#: Share of the shorter copy's words found in the longer one for a truncated copy.
CONTAINMENT = 0.9


def is_same_post(a: MessageFacts, a_raw: bytes, b: MessageFacts, b_raw: bytes) -> bool:
    """True when two messages (usually with one Message-ID) are copies of one post."""
    if a.vitals == b.vitals:
        return True
    if skeleton(a.from_addr) != skeleton(b.from_addr) or skeleton(a.subject) != skeleton(b.subject):
        return False
    words_a = body_tokens(split_message(a_raw)[1])
    words_b = body_tokens(split_message(b_raw)[1])
    if not words_a or not words_b:
        # One copy lost its text entirely (old Pipermail scrubbers did that).
        return True
    common = sum((words_a & words_b).values())
    sizes = (sum(words_a.values()), sum(words_b.values()))
    return common / max(sizes) >= SIMILARITY or common / min(sizes) >= CONTAINMENT
