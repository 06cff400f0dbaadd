from django import forms
from django.utils.translation import gettext_lazy as _

from apps.accounts.selectors import teams_for_user


class TeamSwitchForm(forms.Form):
    team = forms.ModelChoiceField(queryset=None, label=_("Team"))

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams_for_user(user)
