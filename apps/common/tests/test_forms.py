"""A service's refusal on a browser form: on the field it names when the form shows that field, else on the form."""

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from apps.common.forms import add_service_errors


class PriceForm(forms.Form):
    amount = forms.DecimalField()
    source = forms.CharField()


def checked_form() -> PriceForm:
    form = PriceForm({"amount": "3.50", "source": "https://acme.test/pricing"})
    assert form.is_valid()
    return form


def test_errors_go_on_the_fields_the_form_shows():
    form = checked_form()
    add_service_errors(form, ValidationError({
        "amount": ValidationError("Give at most %(places)s decimals.", code="decimals", params={"places": 2}),
        "source": "Not a valid web address.",
    }))
    assert form.errors == {"amount": ["Give at most 2 decimals."], "source": ["Not a valid web address."]}
    assert form.has_error("amount", "decimals")
    assert "amount" not in form.cleaned_data


def test_model_wide_errors_and_fields_the_form_does_not_show_go_on_the_form():
    form = checked_form()
    add_service_errors(form, ValidationError({
        NON_FIELD_ERRORS: ["Each owning figure needs its source."],
        "team": ["This vendor belongs to another team."],
    }))
    assert form.non_field_errors() == ["Each owning figure needs its source.", "This vendor belongs to another team."]
    assert set(form.errors) == {NON_FIELD_ERRORS}


def test_a_message_without_a_field_goes_on_the_form():
    form = checked_form()
    add_service_errors(form, ValidationError([
        ValidationError("A pool named %(name)s exists.", code="unique", params={"name": "h200"}),
        "Choose another name.",
    ]))
    assert form.non_field_errors() == ["A pool named h200 exists.", "Choose another name."]
    assert form.has_error(NON_FIELD_ERRORS, "unique")
