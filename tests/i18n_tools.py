"""Helpers of the translation tests: extract the messages of the source, build a pseudo-locale, find untranslated text.

- `extract_messages()` runs Django's makemessages on a copy of the source, so the real catalogs are never touched:
  the project's templates/ and config/ go to locale/, each app under apps/ to its own apps/<app>/locale.
- `pseudo_translate()` turns "Log in" into "⟦Ĺóĝ íñ⟧", keeping placeholders, HTML tags and entities intact.
- `untranslated_text()` lists the visible text of a page (and its placeholder/title/aria-label/alt/button values)
  that is not inside ⟦…⟧ — text that no catalog translated; `untranslated_pieces()` does the same for text a browser
  collected from the rendered DOM.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import polib
from django.apps import apps
from django.conf import settings

BASE_DIR = Path(settings.BASE_DIR)
LANGUAGES = ("fr", "id")
PSEUDO_LANGUAGE = "en-xa"  # the code Android and Chrome use for their accented pseudo-locale
PSEUDO_LOCALE = "en_XA"
OPEN, CLOSE = "⟦", "⟧"

# What the source copy for extraction holds: project code and templates, never tests or migrations.
_SOURCE_FOLDERS = ("config", "templates", "apps")
_NOT_SOURCE = shutil.ignore_patterns("tests", "migrations", "__pycache__", "locale", "*.pyc", "static")


# --- Catalogs ----------------------------------------------------------------------------------------------------


def app_folders() -> list[Path]:
    """apps/<app>/ for every app package, installed or not yet (each keeps its own catalogs)."""
    return sorted(path for path in (BASE_DIR / "apps").iterdir() if (path / "__init__.py").exists())


def catalog_dirs() -> list[Path]:
    """The locale folders Dossier ships: locale/ (templates/, config/) and apps/<app>/locale for each app."""
    return [BASE_DIR / "locale", *(folder / "locale" for folder in app_folders())]


def po_path(locale_dir: Path, language: str) -> Path:
    return locale_dir / language / "LC_MESSAGES" / "django.po"


def entry_key(entry) -> tuple[str, str]:
    return (entry.msgctxt or "", entry.msgid)


def extract_messages(workspace: Path) -> dict[Path, polib.POFile]:
    """{real locale dir: catalog of the msgids its source marks}, from makemessages run on a copy of the source."""
    source = workspace / "src"
    source.mkdir()
    for folder in _SOURCE_FOLDERS:
        shutil.copytree(BASE_DIR / folder, source / folder, ignore=_NOT_SOURCE)
    # Each app collects its own messages: makemessages sends a file's strings to the nearest enclosing locale/.
    copies = {source / "locale": BASE_DIR / "locale"}
    for folder in app_folders():
        copies[source / folder.relative_to(BASE_DIR) / "locale"] = folder / "locale"
    for copied in copies:
        copied.mkdir(parents=True, exist_ok=True)
    environment = {
        **os.environ,
        "PYTHONPATH": str(source),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DOSSIER_VAR_DIR": str(workspace / "var"),
    }
    command = [sys.executable, "-m", "django", "makemessages", "--locale", "fr", "--no-location", "--no-wrap"]
    finished = subprocess.run(command, cwd=source, env=environment, capture_output=True, text=True, check=False)
    if finished.returncode != 0:
        raise RuntimeError(f"makemessages failed ({finished.returncode}):\n{finished.stdout}\n{finished.stderr}")
    extracted = {}
    for copied, real in copies.items():
        path = po_path(copied, "fr")
        if path.exists():
            extracted[real] = polib.pofile(str(path))
    return extracted


def shipped_third_party_messages() -> set[tuple[str, str, str]]:
    """Messages of Django and the installed libraries that are translated in *every* Dossier language.

    They reach our pages (form errors, filter choices); a library lacking one of our languages shows English there,
    so its messages stay out of the pseudo-locale and the pseudo-locale test reports them.
    """
    import django

    folders = [Path(django.__file__).parent / "conf" / "locale"]
    folders += [
        Path(config.path) / "locale" for config in apps.get_app_configs() if not config.name.startswith("apps.")
    ]
    translated: set[tuple[str, str, str]] = set()
    for folder in folders:
        per_language = []
        for language in LANGUAGES:
            mo = folder / language / "LC_MESSAGES" / "django.mo"
            if not mo.exists():
                break
            per_language.append(
                {(*entry_key(entry), entry.msgid_plural or "") for entry in polib.mofile(str(mo)) if entry.msgid}
            )
        else:
            translated |= set.intersection(*per_language)
    return translated


# --- Placeholders ------------------------------------------------------------------------------------------------

# Kept verbatim by the pseudo-locale and compared between a msgid and its translations.
PLACEHOLDER = re.compile(r"%\([^)]+\)[-#0 +]*\d*(?:\.\d+)?[sdifr]|%[sdifr]|%%|\{[A-Za-z_][A-Za-z0-9_]*\}")
_KEEP = re.compile(PLACEHOLDER.pattern + r"|<[^>]*>|&[A-Za-z#0-9]+;")


def placeholders(text: str) -> list[str]:
    return sorted(PLACEHOLDER.findall(text))


# --- The pseudo-locale -------------------------------------------------------------------------------------------

_ACCENTED = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "àƀçđéƒĝĥíĵķĺɱñóþǫŕšťúṽŵẋýžÀƁÇĐÉƑĜĤÍĴĶĹṀÑÓÞǪŔŠŤÚṼŴẊÝŽ",
)


def pseudo_translate(text: str) -> str:
    """ "Log in %(name)s" → "⟦Ĺóĝ íñ %(name)s⟧": letters accented, placeholders, tags and entities untouched."""
    pieces = []
    position = 0
    for kept in _KEEP.finditer(text):
        pieces.append(text[position : kept.start()].translate(_ACCENTED))
        pieces.append(kept.group())
        position = kept.end()
    pieces.append(text[position:].translate(_ACCENTED))
    return OPEN + "".join(pieces) + CLOSE


def write_pseudo_catalog(keys: Iterable[tuple[str, str, str]], locale_dir: Path) -> Path:
    """Compile (msgctxt, msgid, msgid_plural) entries into locale_dir/en_XA/LC_MESSAGES/django.mo."""
    catalog = polib.POFile()
    catalog.metadata = {
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
        "Language": PSEUDO_LOCALE,
        "Plural-Forms": "nplurals=2; plural=(n != 1);",
    }
    for context, msgid, msgid_plural in sorted(set(keys)):
        entry = polib.POEntry(msgid=msgid, msgctxt=context or None)
        if msgid_plural:
            entry.msgid_plural = msgid_plural
            entry.msgstr_plural = {0: pseudo_translate(msgid), 1: pseudo_translate(msgid_plural)}
        else:
            entry.msgstr = pseudo_translate(msgid)
        catalog.append(entry)
    target = locale_dir / PSEUDO_LOCALE / "LC_MESSAGES"
    target.mkdir(parents=True, exist_ok=True)
    catalog.save_as_mofile(str(target / "django.mo"))
    return target / "django.mo"


# --- Finding untranslated text ------------------------------------------------------------------------------------

CHECKED_ATTRIBUTES = ("placeholder", "title", "aria-label", "alt")
_SKIPPED_ELEMENTS = {"script", "style", "template"}
_VOID_ELEMENTS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class _Node:
    tag: str
    skipped: bool


class _VisibleText(HTMLParser):
    """Collects visible text in document order (None separates text nodes) and the attribute values to check."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[_Node] = []
        self.text: list[str | None] = []
        self.attribute_values: list[str] = []

    @property
    def skipping(self) -> bool:
        return bool(self.stack) and self.stack[-1].skipped

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        # translate="no" covers the element, its attributes and its descendants, until one says translate="yes".
        translate = (attributes.get("translate") or "").strip().lower()
        skipped = tag in _SKIPPED_ELEMENTS or translate == "no" or (self.skipping and translate != "yes")
        if not skipped:
            for name in CHECKED_ATTRIBUTES:
                if attributes.get(name):
                    self.attribute_values.append(attributes[name])
            is_button = tag == "input" and (attributes.get("type") or "").lower() in ("submit", "button", "reset")
            if is_button and attributes.get("value"):
                self.attribute_values.append(attributes["value"])
        if tag not in _VOID_ELEMENTS:
            self.stack.append(_Node(tag, skipped))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in _VOID_ELEMENTS and self.stack and self.stack[-1].tag == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        for index in range(len(self.stack) - 1, -1, -1):
            if self.stack[index].tag == tag:
                del self.stack[index:]
                return

    def handle_data(self, data):
        if not self.skipping:
            self.text.append(data)
            self.text.append(None)


def _outside_markers(pieces: Iterable[str | None]) -> Iterator[str]:
    """Runs of text outside ⟦…⟧ (a translated string may span several text nodes: its inner tags split it)."""
    depth = 0
    run: list[str] = []
    for piece in pieces:
        if piece is None:
            if run:
                yield "".join(run)
                run = []
            continue
        for character in piece:
            if character == OPEN:
                depth += 1
            elif character == CLOSE:
                depth -= 1
                if depth < 0:
                    yield "unbalanced ⟧"
                    depth = 0
            elif depth == 0:
                run.append(character)
    if run:
        yield "".join(run)
    if depth:
        yield "unbalanced ⟦"


def _has_letters(text: str) -> bool:
    return any(character.isalpha() for character in text)


def untranslated_pieces(text: Iterable[str | None], attribute_values: Iterable[str] = ()) -> list[str]:
    """Text outside the pseudo-locale's markers that contains letters: `text` is the visible text in document order,
    None between text nodes (a browser's DOM walk gives it as well as the parser below); each attribute value stands
    alone."""
    found = [" ".join(run.split()) for run in _outside_markers(text) if _has_letters(run)]
    for value in attribute_values:
        found += [" ".join(run.split()) for run in _outside_markers([value]) if _has_letters(run)]
    return found


def untranslated_text(html: str) -> list[str]:
    """Visible text and checked attribute values that contain letters outside the pseudo-locale's markers."""
    parser = _VisibleText()
    parser.feed(html)
    parser.close()
    return untranslated_pieces(parser.text, parser.attribute_values)
