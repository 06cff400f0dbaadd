"""Forms of the team administration pages. None of them has a staff or superuser field: those stay in the admin
site, for superusers."""

from datetime import timedelta

from django import forms
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.accounts.models import Team
from apps.accounts.roles import Role


class TeamForm(forms.ModelForm):
    class Meta:
        model = Team
        fields = ["name", "slug", "reporting_currency"]


def roles_field(**kwargs) -> forms.MultipleChoiceField:
    return forms.MultipleChoiceField(
        label=_("Roles"), choices=Role.choices, required=False, widget=forms.CheckboxSelectMultiple, **kwargs
    )


class PersonForm(forms.Form):
    username = forms.CharField(label=_("Username"), max_length=150)
    email = forms.EmailField(label=_("E-mail"), required=False)
    first_name = forms.CharField(label=_("First name"), max_length=150, required=False)
    last_name = forms.CharField(label=_("Last name"), max_length=150, required=False)
    roles = roles_field(help_text=_("Roles hold in every team the person belongs to."))


class AddMemberForm(forms.Form):
    username = forms.CharField(label=_("Username of an existing person"), max_length=150)
    roles = roles_field(help_text=_("Leave every box empty to keep the roles the person holds."))


class RolesForm(forms.Form):
    roles = roles_field()


class PoolSetupForm(forms.Form):
    name = forms.CharField(label=_("Pool name"), max_length=100)
    description = forms.CharField(label=_("Description"), max_length=500, required=False)
    token_description = forms.CharField(label=_("Token description"), max_length=200, required=False,
                                        help_text=_("Where the token goes, e.g. the vendor's trial nodes."))
    single_use = forms.BooleanField(label=_("Single use"), required=False,
                                    help_text=_("The token registers one agent, then stops working."))
    expires_in_days = forms.IntegerField(label=_("Expires after (days)"), required=False, min_value=1,
                                         max_value=365, help_text=_("Leave empty for a token that does not expire."))

    def expires_at(self):
        days = self.cleaned_data.get("expires_in_days")
        return timezone.now() + timedelta(days=days) if days else None
