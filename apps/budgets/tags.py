"""Tags carried by workloads and decision records: a short list of slugs ("inference", "eu-west", "q3-launch") that
finance groups spend by. Pure Python (no Django).

A tag is a slug: lower-case letters, digits and hyphens, starting with a letter or a digit, at most `MAX_LENGTH`
characters; a list holds at most `MAX_TAGS` of them, each once, sorted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_TAGS = 20
MAX_LENGTH = 40
SLUG = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class TagError(ValueError):
    """A tag list that cannot be kept; the message names the first bad tag."""


def parse_tags(value: str | Iterable[str] | None) -> list[str]:
    """The tags of `value` (a list, or a text of tags separated by commas or spaces) as a sorted list of unique slugs.
    Upper-case letters are lowered and surrounding spaces dropped; anything else that is not a slug is refused."""
    if value is None:
        return []
    items = re.split(r"[,\s]+", value) if isinstance(value, str) else list(value)
    tags = set()
    for item in items:
        if not isinstance(item, str):
            raise TagError(f"{item!r} is not a tag")
        tag = item.strip().lower()
        if not tag:
            continue
        if len(tag) > MAX_LENGTH or not SLUG.match(tag):
            raise TagError(tag)
        tags.add(tag)
    if len(tags) > MAX_TAGS:
        raise TagError(f"more than {MAX_TAGS} tags")
    return sorted(tags)
