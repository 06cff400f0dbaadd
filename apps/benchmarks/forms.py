"""Forms of the benchmark pages."""

import json

from django import forms
from django.utils.translation import gettext_lazy as _

from apps.benchmarks.plan_spec import PlanSpecError, contract_problems, normalise_plan_spec
from apps.fleet.models import Agent, AgentPool

DEFAULT_PLAN_SPEC = {"jobs": [{"kind": "inventory", "spec": {}, "acceptance_criteria": {}, "count": 1}]}


class PlanForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=200)
    description = forms.CharField(label=_("Description"), required=False, widget=forms.Textarea(attrs={"rows": 2}))
    # Pool and agent names are data: their selects are marked translate="no" (the empty choice is only dashes).
    target_pool = forms.ModelChoiceField(label=_("Agent pool"), queryset=AgentPool.objects.none(),
                                         widget=forms.Select(attrs={"translate": "no"}))
    target_agent = forms.ModelChoiceField(label=_("Agent"), queryset=Agent.objects.none(), required=False,
                                          widget=forms.Select(attrs={"translate": "no"}),
                                          help_text=_("Leave empty to let any capable agent of the pool run the jobs."))
    jobs = forms.CharField(
        label=_("Jobs (JSON)"), widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false", "translate": "no"}),
        initial=json.dumps(DEFAULT_PLAN_SPEC, indent=2),
        help_text=_('{"candidate_id": …, "gpus_per_replica": …, "jobs": [{"kind": …, "spec": {…}, '
                    '"acceptance_criteria": {…}, "required_operations": […], "count": 1}]} — the spec and criteria '
                    'are frozen when the plan is dispatched. "candidate_id" (optional) names the candidate whose '
                    'phase-4 inputs the results go to; "gpus_per_replica" (optional) the GPUs behind the endpoint, '
                    'which a sweep\'s capacity is divided by. A throughput spec is checked with the agent\'s own '
                    'load-spec check.'),
    )

    def __init__(self, *args, team=None, **kwargs):
        super().__init__(*args, **kwargs)
        if team is not None:
            self.fields["target_pool"].queryset = AgentPool.objects.for_team(team).filter(is_active=True)
            self.fields["target_agent"].queryset = Agent.objects.filter(pool__team=team, revoked_at__isnull=True)

    def clean_jobs(self):
        try:
            value = json.loads(self.cleaned_data["jobs"])
        except ValueError as error:
            raise forms.ValidationError(_("This is not valid JSON: %(error)s") % {"error": error}) from None
        try:
            entries = normalise_plan_spec(value)
        except PlanSpecError as error:
            raise forms.ValidationError(error.problems) from None
        problems = contract_problems(entries)
        if problems:
            raise forms.ValidationError(problems)
        return value

    def clean(self):
        cleaned = super().clean()
        pool, agent = cleaned.get("target_pool"), cleaned.get("target_agent")
        if pool is not None and agent is not None and agent.pool_id != pool.pk:
            self.add_error("target_agent", _("The agent is not in the chosen pool."))
        return cleaned


class CancelForm(forms.Form):
    reason = forms.CharField(label=_("Reason"), max_length=200, required=False)
