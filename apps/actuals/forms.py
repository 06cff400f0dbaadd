from django import forms
from django.utils.translation import gettext_lazy as _

#: An upload of one day per row is small: a year of days is about 30 KB as CSV.
MAX_UPLOAD_BYTES = 5 * 1024 * 1024


class ActualsUploadForm(forms.Form):
    file = forms.FileField(
        label=_("Actuals sheet (.csv or .xlsx)"),
        help_text=_("One row per day: date, gpu_hours, outputs, accepted_outputs, spend, currency."),
    )
    source = forms.CharField(
        label=_("Source"),
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2, "translate": "no"}),
        help_text=_("Where the figures come from: the billing export, the observability query, the period."),
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                _("The file is over %(size)s MB.") % {"size": MAX_UPLOAD_BYTES // (1024 * 1024)}
            )
        return upload
