"""A price from the vendor's file is recorded with the file in one step (page and API): the file becomes the quote's
document and the price cites it, both saved in one transaction or neither (no row, no stored file)."""

import datetime
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from apps.quotes import services
from apps.quotes.models import PriceVersion, QuoteDocument

PDF = b"%PDF-1.7\n% vendor quote ACME-2026-114\n"


def pdf(name="acme-quote.pdf", content=PDF):
    return SimpleUploadedFile(name, content, content_type="application/pdf")


def stored_files() -> list[Path]:
    root = Path(settings.MEDIA_ROOT)
    return [path for path in root.rglob("*") if path.is_file()] if root.exists() else []


def price_post(**changes):
    data = {
        "component": "contracted_price",
        "amount": "3.20",
        "currency": "",
        "source_kind": "vendor_quote_file",
        "source_reference": "acme-quote.pdf, page 2",
        "observed_at": (timezone.localtime() - datetime.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M"),
        "valid_until": "",
        "note": "",
        "document": "",
    }
    data.update(changes)
    return data


def test_the_price_form_stores_the_uploaded_file_and_cites_it(client_for, quote, platform_user):
    """One POST: the document row, its stored file (same bytes) and the price citing it."""
    response = client_for(platform_user).post(
        reverse("quotes:price-create", args=[quote.pk]), {**price_post(), "file": pdf()}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    document = QuoteDocument.objects.get()
    version = PriceVersion.objects.get(quote=quote, component="contracted_price")
    assert version.document == document
    assert document.quote == quote and document.original_name == "acme-quote.pdf" and document.kind == "pdf"
    with document.file.open("rb") as handle:
        assert handle.read() == PDF
    assert len(stored_files()) == 1


def test_the_price_form_shows_the_file_field_and_sends_multipart(client_for, quote, platform_user):
    html = client_for(platform_user).get(reverse("quotes:price-create", args=[quote.pk])).content.decode()
    assert 'enctype="multipart/form-data"' in html
    assert 'type="file" name="file"' in html


def test_a_refused_price_saves_neither_the_document_nor_the_file(client_for, quote, platform_user):
    """The file passes its checks and is stored first; the price is refused after (observed in the future): the
    transaction is undone and the stored file deleted."""
    future = (timezone.localtime() + datetime.timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    response = client_for(platform_user).post(
        reverse("quotes:price-create", args=[quote.pk]), {**price_post(observed_at=future), "file": pdf()}
    )
    assert response.status_code == 200
    assert "A price cannot be observed in the future." in response.content.decode()
    assert not QuoteDocument.objects.exists()
    assert not PriceVersion.objects.exists()
    assert stored_files() == []


def test_a_refused_file_is_shown_on_the_file_field_and_nothing_is_saved(client_for, quote, platform_user):
    response = client_for(platform_user).post(
        reverse("quotes:price-create", args=[quote.pk]),
        {**price_post(), "file": pdf("fake.pdf", b"<html>not a pdf</html>")},
    )
    assert response.status_code == 200
    assert response.context["form"].errors["file"]
    assert not QuoteDocument.objects.exists() and not PriceVersion.objects.exists()
    assert stored_files() == []


def test_a_vendor_file_price_without_a_file_says_how_to_attach_it(client_for, quote, platform_user):
    response = client_for(platform_user).post(reverse("quotes:price-create", args=[quote.pk]), price_post())
    assert response.status_code == 200
    message = " ".join(response.context["form"].errors["document"])
    assert "upload it with this price" in message
    assert "/api/v1/quotes/price-versions/" in message


def test_an_uploaded_file_and_a_picked_document_together_are_refused(client_for, quote, platform_user):
    attached = services.document_attach(actor=platform_user, quote=quote, upload=pdf("earlier.pdf"))
    response = client_for(platform_user).post(
        reverse("quotes:price-create", args=[quote.pk]), {**price_post(document=attached.pk), "file": pdf()}
    )
    assert response.status_code == 200
    assert response.context["form"].errors["file"]
    assert QuoteDocument.objects.get() == attached
    assert not PriceVersion.objects.exists()


def test_the_service_undoes_the_document_when_the_price_is_refused(quote, platform_user):
    with pytest.raises(ValidationError) as error:
        services.price_record_citing_upload(
            actor=platform_user, quote=quote, upload=pdf(), component="list_price", amount="3.20",
            source_kind="vendor_quote_file", source_reference="", observed_at=timezone.now(),
        )
    assert "source_reference" in error.value.message_dict or "__all__" in error.value.message_dict
    assert not QuoteDocument.objects.exists() and not PriceVersion.objects.exists()
    assert stored_files() == []


def test_the_price_page_of_another_teams_quote_is_404(client_for, quote, outsider):
    response = client_for(outsider).post(
        reverse("quotes:price-create", args=[quote.pk]), {**price_post(), "file": pdf()}
    )
    assert response.status_code == 404
    assert not QuoteDocument.objects.exists() and stored_files() == []


def test_the_api_takes_the_file_in_a_multipart_price(quote, platform_user):
    client = APIClient()
    client.force_authenticate(platform_user)
    data = {**price_post(), "quote": quote.pk, "observed_at": "2026-11-30T12:00:00Z", "file": pdf()}
    for empty in ("currency", "valid_until", "document"):
        data.pop(empty)
    response = client.post("/api/v1/quotes/price-versions/", data, format="multipart")
    assert response.status_code == 201, response.json()
    document = QuoteDocument.objects.get()
    assert response.json()["document"] == document.pk
    assert "file" not in response.json()
    assert PriceVersion.objects.get().document == document


def test_the_api_refusal_keeps_nothing(quote, platform_user):
    client = APIClient()
    client.force_authenticate(platform_user)
    data = {**price_post(), "quote": quote.pk, "observed_at": "2999-01-01T00:00:00Z", "file": pdf()}
    for empty in ("currency", "valid_until", "document"):
        data.pop(empty)
    response = client.post("/api/v1/quotes/price-versions/", data, format="multipart")
    assert response.status_code == 400
    assert "observed_at" in response.json()
    assert not QuoteDocument.objects.exists() and not PriceVersion.objects.exists()
    assert stored_files() == []
