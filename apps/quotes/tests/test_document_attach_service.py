"""Quote documents: PDF, XLSX, CSV and EML only, recognised by their content, under the size limit."""

import io

import openpyxl
import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile

from apps.quotes import services
from apps.quotes.models import QuoteDocument


def upload(name, content, content_type="application/octet-stream"):
    return SimpleUploadedFile(name, content, content_type=content_type)


def xlsx_bytes():
    workbook = openpyxl.Workbook()
    workbook.active.append(["sku", "price"])
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


EML = b"From: sales@acme.test\r\nTo: buyer@example.test\r\nSubject: Your H200 quote\r\n\r\nPrice: 3.20 USD/GPU-hour\r\n"


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("quote.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "pdf"),
        ("prices.xlsx", None, "xlsx"),
        ("prices.csv", "sku,price\nH200,3.20 €\n".encode(), "csv"),
        ("offer.eml", EML, "eml"),
    ],
)
def test_the_four_document_types_are_accepted(quote, platform_user, name, content, kind):
    document = services.document_attach(
        actor=platform_user, quote=quote, upload=upload(name, content if content is not None else xlsx_bytes())
    )
    assert document.kind == kind
    assert document.size_bytes == document.file.size
    assert len(document.sha256) == 64
    assert document.file.name.startswith(f"quotes/{quote.team_id}/")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("script.exe", b"MZ\x90\x00"),
        ("fake.pdf", b"<html>not a pdf</html>"),
        ("fake.xlsx", b"PK\x03\x04 but not a workbook"),
        ("binary.csv", b"a,b\n\x00\x01\x02"),
        ("note.eml", b"just some words without any header\n"),
        ("empty.pdf", b""),
    ],
)
def test_other_types_and_disguised_files_are_refused(quote, platform_user, name, content):
    with pytest.raises(ValidationError):
        services.document_attach(actor=platform_user, quote=quote, upload=upload(name, content))
    assert not QuoteDocument.objects.exists()


def test_a_document_over_the_size_limit_is_refused(quote, platform_user, settings):
    settings.QUOTE_DOCUMENT_MAX_BYTES = 1024
    with pytest.raises(ValidationError) as error:
        services.document_attach(actor=platform_user, quote=quote, upload=upload("big.pdf", b"%PDF-" + b"0" * 2000))
    assert error.value.code == "size"
    document = services.document_attach(
        actor=platform_user, quote=quote, upload=upload("ok.pdf", b"%PDF-" + b"0" * 900)
    )
    assert document.size_bytes == 905
