"""Forms of the fleet pages."""

from datetime import timedelta

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.fleet.models import AgentCommand, AgentPool
from apps.quotes.models import Candidate


class PoolForm(forms.ModelForm):
    class Meta:
        model = AgentPool
        fields = ["name", "description"]


class RegistrationTokenForm(forms.Form):
    description = forms.CharField(label=_("Description"), max_length=200, required=False,
                                  help_text=_("Where the token goes, e.g. the vendor's trial nodes."))
    single_use = forms.BooleanField(label=_("Single use"), required=False,
                                    help_text=_("The token registers one agent, then stops working."))
    expires_in_days = forms.IntegerField(label=_("Expires after (days)"), required=False, min_value=1,
                                         max_value=365, help_text=_("Leave empty for a token that does not expire."))

    def expires_at(self):
        days = self.cleaned_data.get("expires_in_days")
        return timezone.now() + timedelta(days=days) if days else None


class AgentCommandForm(forms.Form):
    command = forms.ChoiceField(label=_("Command"), choices=AgentCommand.choices)


class CandidateLinkForm(forms.Form):
    # Candidate labels are data: the select is marked translate="no" (its empty choice is only dashes).
    candidate = forms.ModelChoiceField(label=_("Candidate"), queryset=None, required=False,
                                       widget=forms.Select(attrs={"translate": "no"}),
                                       help_text=_("The quoted node this agent runs on; empty to unlink."))

    def __init__(self, *args, team, **kwargs):

        super().__init__(*args, **kwargs)
        self.fields["candidate"].queryset = Candidate.objects.for_team(team).select_related("quote")
