"""Forms of the catalog: the admin-only figure edit (browser and Django admin). Both defer to the service's checks."""

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from apps.catalog.models import GpuSpec
from apps.catalog.services import AS_OF_REQUIRED, SOURCE_REQUIRED, check_spec_input
from apps.common.forms import add_service_errors

SOURCE_HELP = _("The web address of the datasheet, or a description of the reading (tool, card, driver, date).")
AS_OF_HELP = _("The date the source gives the value as of.")


def check_with_service(form: forms.BaseForm, key: str) -> None:
    """Check the figure exactly as gpu_spec_set will, so that a valid form always saves."""
    if form.errors:
        return
    try:
        check_spec_input(
            key=key,
            value=form.cleaned_data.get("value"),
            source=form.cleaned_data.get("source", ""),
            as_of=form.cleaned_data.get("as_of"),
        )
    except ValidationError as error:
        add_service_errors(form, error)


class GpuSpecForm(forms.Form):
    """Set one figure of a GPU model from the catalog page. Source and date are asked afresh for every edit."""

    value = forms.DecimalField(label=_("Value"), min_value=0, max_digits=14, decimal_places=4)
    source = forms.CharField(
        label=_("Source"), max_length=500, help_text=SOURCE_HELP, error_messages={"required": SOURCE_REQUIRED}
    )
    as_of = forms.DateField(
        label=_("As of"),
        help_text=AS_OF_HELP,
        error_messages={"required": AS_OF_REQUIRED},
        widget=forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d"),
    )

    def __init__(self, *args, key: str, **kwargs):
        self.key = key
        super().__init__(*args, **kwargs)

    def clean(self):
        cleaned = super().clean()
        check_with_service(self, self.key)
        return cleaned


class GpuSpecAdminForm(forms.ModelForm):
    """The Django admin's form: like GpuSpecForm, saved through gpu_spec_set by GpuSpecAdmin.save_model."""

    source = forms.CharField(
        label=_("Source"), max_length=500, help_text=SOURCE_HELP, error_messages={"required": SOURCE_REQUIRED}
    )

    class Meta:
        model = GpuSpec
        fields = ["gpu", "key", "value", "source", "as_of"]
        help_texts = {"as_of": AS_OF_HELP}
        error_messages = {"as_of": {"required": AS_OF_REQUIRED}}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            # A correction cites its own source and date; the current ones are shown beside the form.
            self.initial["as_of"] = None

    def clean(self):
        cleaned = super().clean()
        check_with_service(self, cleaned.get("key") or self.instance.key)
        return cleaned
