"""Forms of the decision-record pages: start a draft, edit it, sign a stage, choose one's notifications."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _

from apps.decisions import selectors
from apps.decisions.models import CapacityModel, NotificationPreference

#: Widgets showing data (names, the record's own text): browsers' translators and the pseudo-locale check leave them
#: alone.
DATA = {"translate": "no"}


class DateInput(forms.DateInput):
    input_type = "date"


class _PersonChoice(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj) -> str:
        full = obj.get_full_name()
        return f"{full} ({obj.get_username()})" if full else obj.get_username()


class RecordStartForm(forms.Form):
    workload_summary = forms.ModelChoiceField(
        label=_("Workload version"),
        queryset=None,
        widget=forms.Select(attrs=DATA),
        help_text=_("A ready version: its candidates are the options the record weighs."),
    )
    title = forms.CharField(label=_("Title"), max_length=200)

    def __init__(self, *args, user, team, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["workload_summary"].queryset = selectors.selectable_summaries(user, team)


class RecordForm(forms.Form):
    """The MADR fields of a draft; the options are the candidates of the record's workload version."""

    title = forms.CharField(label=_("Title"), max_length=200)
    context = forms.CharField(
        label=_("Context and problem"), widget=forms.Textarea(attrs={"rows": 4, **DATA}), required=False
    )
    drivers = forms.CharField(
        label=_("Decision drivers"),
        widget=forms.Textarea(attrs={"rows": 3, **DATA}),
        required=False,
        help_text=_("One driver per line."),
    )
    chosen_option = forms.ModelChoiceField(
        label=_("Chosen option"), queryset=None, required=False, widget=forms.Select(attrs=DATA)
    )
    capacity_model = forms.ChoiceField(
        label=_("Capacity model"), choices=[("", "—"), *CapacityModel.choices], required=False
    )
    rationale = forms.CharField(label=_("Rationale"), widget=forms.Textarea(attrs={"rows": 4, **DATA}), required=False)
    consequences = forms.CharField(
        label=_("Consequences"), widget=forms.Textarea(attrs={"rows": 3, **DATA}), required=False
    )
    confirmation_metric = forms.CharField(
        label=_("Confirmation"),
        widget=forms.Textarea(attrs={"rows": 2, **DATA}),
        required=False,
        help_text=_("The figure that will show the decision was right, and when."),
    )
    revisit_on = forms.DateField(label=_("Revisit on"), required=False, widget=DateInput)
    revisit_triggers = forms.CharField(
        label=_("Revisit triggers"),
        widget=forms.Textarea(attrs={"rows": 2, **DATA}),
        required=False,
        help_text=_("Besides expired quotes, changed prices, a new workload version and the date, checked daily."),
    )
    deciders = _PersonChoice(
        label=_("Deciders"), queryset=None, required=False, widget=forms.CheckboxSelectMultiple(attrs=DATA)
    )
    consulted = _PersonChoice(
        label=_("Consulted"), queryset=None, required=False, widget=forms.CheckboxSelectMultiple(attrs=DATA)
    )
    informed = _PersonChoice(
        label=_("Informed"), queryset=None, required=False, widget=forms.CheckboxSelectMultiple(attrs=DATA)
    )

    def __init__(self, *args, record, **kwargs):
        if "initial" not in kwargs:
            kwargs["initial"] = {
                **{name: getattr(record, name) for name in (
                    "title", "context", "drivers", "chosen_option", "capacity_model", "rationale", "consequences",
                    "confirmation_metric", "revisit_on", "revisit_triggers",
                )},
                "deciders": list(record.deciders.all()),
                "consulted": list(record.consulted.all()),
                "informed": list(record.informed.all()),
            }
        super().__init__(*args, **kwargs)
        self.fields["chosen_option"].queryset = selectors.options_of(record.workload_summary)
        members = get_user_model().objects.filter(memberships__team=record.team).order_by("username").distinct()
        for name in ("deciders", "consulted", "informed"):
            self.fields[name].queryset = members


class StageForm(forms.Form):
    decision = forms.ChoiceField(
        label=_("Decision"), choices=[("approve", _("Approve")), ("reject", _("Reject"))], widget=forms.RadioSelect
    )
    comment = forms.CharField(
        label=_("Comment"),
        widget=forms.Textarea(attrs={"rows": 3, **DATA}),
        required=False,
        help_text=_("Required when rejecting: say why."),
    )

    def clean(self):
        data = super().clean()
        if data.get("decision") == "reject" and not (data.get("comment") or "").strip():
            self.add_error("comment", _("A rejection needs its reason."))
        return data


class NotificationPreferenceForm(forms.ModelForm):
    class Meta:
        model = NotificationPreference
        fields = [
            "approval_request_in_app",
            "approval_request_email",
            "decision_in_app",
            "decision_email",
            "revisit_in_app",
            "revisit_email",
        ]
