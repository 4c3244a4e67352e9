"""The display model: what a page needs to show one message, as frozen values.

Plain data only (no behaviour, no I/O); built by ``display.walk``. Text fields
(``subject``, ``author_*``, ``text``) are plain text that templates escape;
``body_html`` is the one field that is already safe HTML.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..translation import Texts

__all__ = ["Attachment", "DisplayOptions", "MessageDisplay"]


@dataclass(frozen=True)
class DisplayOptions:
    """How to display messages (site configuration decides)."""

    obfuscate_addresses: bool = True
    """Show addresses as ``ne…@example.org`` in bodies, author fields and feeds."""
    load_remote_images: bool = False
    """Let HTML mail load ``http(s)`` images (they tell the sender who read the page)."""
    attachment_base: str = ""
    """Relative URL prefix; an attachment's URL is ``attachment_base + urllib.parse.quote(filename)``."""
    text_only: bool = False
    """Leave ``body_html`` empty and make only the text fields (what the search indexer reads)."""
    texts: Texts | None = None
    """The site's words (notes, folded quotes' summaries, labels) in its language; None: English."""
    parent: frozenset[str] = frozenset()
    """The ``quote_keys`` of the message this one answers, when the page shows it too:
    quotes that merely repeat it fold sooner (``display.textbody``)."""
    keys: bool = False
    """Work out the message's ``quote_keys`` (a line-by-line pass over its text, a third of
    the display's cost): for a message whose replies the same page shows."""


@dataclass(frozen=True)
class Attachment:
    """One saved part of a message."""

    filename: str
    """Safe and unique within the message (see ``display.attachments.safe_filename``): the saved file's name."""
    label: str
    """The name to show: the message's own name made printable (``display.attachments.display_name``;
    plain text that templates escape), else ``filename``. Never a file name on disk or in a URL."""
    content_type: str
    """Lower-case ``type/subtype``."""
    size: int
    """Decoded size in bytes."""
    content_id: str | None
    """The Content-ID without angle brackets, when the part has one."""
    inline: bool
    """True when the body shows it (a ``cid:`` image, an inline text part with a name); still saved and listed."""
    data: bytes
    """The decoded payload."""


@dataclass(frozen=True)
class MessageDisplay:
    """One message ready for a page."""

    subject: str
    """Decoded, whitespace-collapsed plain text (not escaped); "" when none."""
    author_name: str
    """Decoded display name, else the address' local part, else ""."""
    author_address: str
    """Plain lower-case address ("" when none); not obfuscated here (templates decide)."""
    author_shown: str
    """What a page may show for the author: the name, or the address obfuscated per the options."""
    date: datetime | None
    """Timezone-aware, in the sender's own offset; None when there is no usable Date."""
    message_id: str | None
    body_html: str
    """The whole body as one safe HTML fragment (escaped or sanitized), ready to insert unescaped."""
    attachments: tuple[Attachment, ...]
    no_archive: bool
    text: str
    """Readable plain text of the new content (quotes and signatures removed), for search and feeds."""
    language: str = ""
    """The message's language as its Content-Language says (its first tag, when it is a
    well-formed one), else ""; pages mark its body with it."""
    quote_keys: frozenset[str] = frozenset()
    """The lines of its text parts as a reply's quote of them is compared (``textbody.quote_keys``)."""
