"""Marking text for translation in pure modules (no Django): `makemessages` finds the mark, the web layer translates.

A pure module keeps its texts in English, each wrapped in `gettext_noop("…")`; the Django side shows one with
`gettext(text)` in the active language, and the app's catalogs hold the French and Indonesian words.
"""


def gettext_noop(message: str) -> str:
    """Mark `message` for `makemessages` and return it unchanged (Django's own `gettext_noop`, without Django)."""
    return message
