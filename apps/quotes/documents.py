"""What a quote document may be: PDF, XLSX, CSV or a saved email (EML), checked by name, size and content.

The name alone proves nothing, so each type is also recognised by its bytes: a PDF starts with %PDF-, an XLSX is a
zip holding a workbook, a CSV or EML is text without NUL bytes (an EML with mail headers).
"""

from __future__ import annotations

import email.parser
import email.policy
import hashlib
import os
import zipfile
from dataclasses import dataclass
from typing import BinaryIO

from django.conf import settings
from django.core.exceptions import ValidationError
from django.template.defaultfilters import filesizeformat
from django.utils.translation import gettext as _

from apps.quotes.models import DocumentKind

DEFAULT_MAX_BYTES = 20 * 1024 * 1024
_SNIFF_BYTES = 64 * 1024
_EXTENSIONS = {".pdf": DocumentKind.PDF, ".xlsx": DocumentKind.XLSX, ".csv": DocumentKind.CSV, ".eml": DocumentKind.EML}
_MAIL_HEADERS = ("from", "to", "subject", "date", "message-id", "received")


def max_document_bytes() -> int:
    """QUOTE_DOCUMENT_MAX_BYTES from the settings (read when needed, never at import), else 20 MiB."""
    return int(getattr(settings, "QUOTE_DOCUMENT_MAX_BYTES", DEFAULT_MAX_BYTES))


@dataclass(frozen=True)
class CheckedDocument:
    kind: str
    size_bytes: int
    sha256: str


def _is_text(head: bytes) -> bool:
    if b"\x00" in head:
        return False
    for encoding in ("utf-8", "cp1252"):
        try:
            head.decode(encoding)
        except UnicodeDecodeError:
            # The sniffed window may cut a multi-byte UTF-8 character in two: retry without the last bytes.
            try:
                head[:-3].decode(encoding)
            except UnicodeDecodeError:
                continue
        return True
    return False


def check_document(name: str, stream: BinaryIO, size: int) -> CheckedDocument:
    """The document's kind, size and SHA-256, or a ValidationError saying what is wrong with it."""
    extension = os.path.splitext(name or "")[1].lower()
    kind = _EXTENSIONS.get(extension)
    if kind is None:
        raise ValidationError(
            _("Attach a PDF, XLSX, CSV or EML file (this one is “%(name)s”).") % {"name": name}, code="type"
        )
    limit = max_document_bytes()
    if size > limit:
        raise ValidationError(
            _("The file is %(size)s; the limit is %(limit)s.")
            % {"size": filesizeformat(size), "limit": filesizeformat(limit)},
            code="size",
        )
    if size == 0:
        raise ValidationError(_("The file is empty."), code="empty")
    stream.seek(0)
    head = stream.read(_SNIFF_BYTES)
    stream.seek(0)
    valid = {
        DocumentKind.PDF: lambda: head.startswith(b"%PDF-"),
        DocumentKind.XLSX: lambda: _is_workbook(stream),
        DocumentKind.CSV: lambda: _is_text(head),
        DocumentKind.EML: lambda: _is_text(head) and _has_mail_headers(head),
    }[kind]()
    stream.seek(0)
    if not valid:
        raise ValidationError(
            _("The content of “%(name)s” is not a %(kind)s file.") % {"name": name, "kind": kind.label},
            code="content",
        )
    digest = hashlib.sha256()
    for chunk in iter(lambda: stream.read(1024 * 1024), b""):
        digest.update(chunk)
    stream.seek(0)
    return CheckedDocument(kind=kind.value, size_bytes=size, sha256=digest.hexdigest())


def _is_workbook(stream: BinaryIO) -> bool:
    try:
        with zipfile.ZipFile(stream) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return False
    return "[Content_Types].xml" in names and "xl/workbook.xml" in names


def _has_mail_headers(head: bytes) -> bool:
    text = head.decode("utf-8", errors="replace")
    message = email.parser.HeaderParser(policy=email.policy.compat32).parsestr(text)
    return any(header.lower() in _MAIL_HEADERS for header in message)
