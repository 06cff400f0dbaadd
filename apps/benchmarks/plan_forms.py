"""The throughput/capacity sweep plan as a form: prefilled from the candidate and its workload summary, producing the
plan JSON the JSON view shows and edits (apps/benchmarks/plan_spec.py), checked with the agent's own load-spec check
before it is saved.

The form's inputs are kept in the plan under "form" so that a draft made here opens in the form again; the job's spec
is rebuilt from them on each save, never edited in two places.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from dossier_agent.contract import lengths

from apps.benchmarks.plan_spec import load_spec_problem
from apps.fleet.models import Agent, AgentPool
from apps.quotes.models import Candidate

FORM_KIND = "throughput_sweep"
KIND = "throughput"
#: The SLO of the workload is a p95: 95 % of the requests must meet each limit.
DEFAULT_ATTAINMENT = Decimal("0.95")

#: Where a load-spec problem belongs, by the first words of the agent's message: the field named on the form.
_PROBLEM_FIELDS = (
    ("prompts.synthetic.input_tokens", "p95_input_tokens"),
    ("prompts.synthetic.output_tokens", "p95_output_tokens"),
    ("endpoint", "endpoint_url"),
    ("duration_s", "level_duration_s"),
    ("warmup_s", "level_duration_s"),
    ("the measured window", "level_duration_s"),
    ("slo", "slo_attainment"),
    ("profile", "search_start"),
    ("rate", "search_start"),
    ("concurrency", "search_start"),
)


def _number(value) -> float | None:
    return None if value is None else float(value)


def initial_from_candidate(candidate: Candidate) -> dict[str, Any]:
    """The form's starting values: the workload's request shape, SLO and target rate; the candidate's node."""
    summary = candidate.workload_summary
    peak = summary.arrival_rate_peak or summary.arrival_rate_mean
    target = float(peak) if peak else None
    agent = (Agent.objects.filter(candidate=candidate, revoked_at__isnull=True, pool__is_active=True)
             .select_related("pool").order_by("pk").first())
    initial: dict[str, Any] = {
        "candidate": candidate.pk,
        "name": (_("Throughput sweep: %(candidate)s") % {"candidate": candidate.label})[:200],
        "mean_input_tokens": summary.mean_input_tokens,
        "p95_input_tokens": summary.p95_input_tokens,
        "mean_output_tokens": summary.mean_output_tokens,
        "p95_output_tokens": summary.p95_output_tokens,
        "ttft_max_ms": summary.p95_ttft_ms,
        "tpot_max_ms": summary.p95_tpot_ms,
        "e2e_max_ms": summary.p95_e2e_ms,
        "slo_attainment": DEFAULT_ATTAINMENT,
        "sweep_key": "rate",
        "target_rate": target,
        "search_start": round(max(target / 4, 0.1), 3) if target else 1.0,
        "search_max": round(target * 2, 3) if target else 64.0,
        "gpus_per_replica": candidate.quote.gpus_per_node if candidate.quote_id else None,
    }
    if agent is not None:
        initial.update(target_pool=agent.pool_id, target_agent=agent.pk)
    return initial


class SweepPlanForm(forms.Form):
    candidate = forms.ModelChoiceField(
        label=gettext_lazy("Candidate measured"), queryset=Candidate.objects.none(),
        widget=forms.Select(attrs={"translate": "no"}),
        help_text=gettext_lazy("Its phase-4 inputs receive the measured capacity, latency and failure rate."))
    name = forms.CharField(label=gettext_lazy("Name"), max_length=200)
    description = forms.CharField(label=gettext_lazy("Description"), required=False,
                                  widget=forms.Textarea(attrs={"rows": 2}))
    target_pool = forms.ModelChoiceField(label=gettext_lazy("Agent pool"), queryset=AgentPool.objects.none(),
                                         widget=forms.Select(attrs={"translate": "no"}))
    target_agent = forms.ModelChoiceField(
        label=gettext_lazy("Agent"), queryset=Agent.objects.none(), required=False,
        widget=forms.Select(attrs={"translate": "no"}),
        help_text=gettext_lazy("Prefilled with an agent on the candidate's node; empty lets any agent of the pool "
                               "run the sweep."))
    endpoint_url = forms.URLField(
        label=gettext_lazy("Endpoint URL"), max_length=500, assume_scheme="http",
        widget=forms.URLInput(attrs={"translate": "no", "placeholder": "http://10.0.0.7:8000"}),
        help_text=gettext_lazy("The serving endpoint as the agent's node reaches it (OpenAI-compatible)."))
    api = forms.ChoiceField(label=gettext_lazy("API"), initial="chat", choices=[
        ("chat", gettext_lazy("chat completions")), ("completions", gettext_lazy("completions"))])
    model = forms.CharField(label=gettext_lazy("Model name at the endpoint"), required=False, max_length=200,
                            widget=forms.TextInput(attrs={"translate": "no"}))
    mean_input_tokens = forms.IntegerField(label=gettext_lazy("Mean input tokens"), min_value=1,
                                           max_value=lengths.MAX_LENGTH)
    p95_input_tokens = forms.IntegerField(
        label=gettext_lazy("p95 input tokens"), min_value=1, max_value=lengths.MAX_LENGTH, required=False,
        help_text=gettext_lazy("Lengths are drawn from a log-normal with this mean and p95 when one exists "
                               "(p95 at most 3.87 × the mean); otherwise from a piecewise distribution (quantile "
                               "knots at 0, 50 %, 95 % and 100 %, log-linear between them) whose mean and p95 are "
                               "exactly these. The plan shows which."))
    mean_output_tokens = forms.IntegerField(label=gettext_lazy("Mean output tokens"), min_value=1,
                                            max_value=lengths.MAX_LENGTH)
    p95_output_tokens = forms.IntegerField(label=gettext_lazy("p95 output tokens"), min_value=1,
                                           max_value=lengths.MAX_LENGTH, required=False)
    ttft_max_ms = forms.IntegerField(label=gettext_lazy("Time to first token limit (ms)"), min_value=1,
                                     required=False)
    tpot_max_ms = forms.IntegerField(label=gettext_lazy("Time per output token limit (ms)"), min_value=1,
                                     required=False)
    e2e_max_ms = forms.IntegerField(label=gettext_lazy("End-to-end latency limit (ms)"), min_value=1, required=False)
    slo_attainment = forms.DecimalField(
        label=gettext_lazy("Share of requests that must meet every limit"), min_value=Decimal("0.5"),
        max_value=Decimal("0.9999"), decimal_places=4, initial=DEFAULT_ATTAINMENT,
        help_text=gettext_lazy("0.95 for a p95 target: the capacity is the highest load at which this share holds."))
    sweep_key = forms.ChoiceField(label=gettext_lazy("Offered load"), initial="rate", choices=[
        ("rate", gettext_lazy("request rate (open loop, Poisson arrivals)")),
        ("concurrency", gettext_lazy("concurrent requests (closed loop)"))])
    target_rate = forms.FloatField(label=gettext_lazy("Target rate (requests/s), from the workload"), required=False,
                                   min_value=0, disabled=True)
    search_start = forms.FloatField(label=gettext_lazy("First level"), min_value=0.001, max_value=1_000_000)
    search_max = forms.FloatField(label=gettext_lazy("Highest level"), min_value=0.001, max_value=1_000_000)
    search_factor = forms.FloatField(label=gettext_lazy("Step factor"), min_value=1.1, max_value=10, initial=2.0)
    max_levels = forms.IntegerField(label=gettext_lazy("Most levels"), min_value=2, max_value=30, initial=10)
    level_duration_s = forms.IntegerField(label=gettext_lazy("Seconds per level"), min_value=20, max_value=3600,
                                          initial=60)
    gpus_per_replica = forms.IntegerField(
        label=gettext_lazy("GPUs behind the endpoint"), min_value=1, max_value=4096,
        help_text=gettext_lazy("The capacity per GPU is the capacity at the SLO divided by this number; prefilled "
                               "with the quote's GPUs per node."))

    def __init__(self, *args, team, **kwargs):
        super().__init__(*args, **kwargs)
        self.team = team
        self.fields["candidate"].queryset = Candidate.objects.for_team(team).select_related("quote")
        self.fields["target_pool"].queryset = AgentPool.objects.for_team(team).filter(is_active=True)
        self.fields["target_agent"].queryset = Agent.objects.filter(pool__team=team, revoked_at__isnull=True)
        self.plan_spec: dict[str, Any] | None = None

    # --- the plan JSON ---------------------------------------------------------------------------------------------

    def inputs(self) -> dict[str, Any]:
        """The cleaned inputs as JSON values (kept in the plan under "form")."""
        data = self.cleaned_data
        out = {}
        for name in self.fields:
            if name in ("candidate", "target_pool", "target_agent", "name", "description", "target_rate"):
                continue
            value = data.get(name)
            out[name] = str(value) if isinstance(value, Decimal) else value
        return out

    def _lengths(self, prefix: str, mean: int, p95: int | None, field: str) -> dict[str, Any]:
        try:
            return lengths.synthetic_lengths(prefix, mean, p95)
        except lengths.LengthError as error:
            self.add_error(field, str(error))
            return {}

    def build_plan_spec(self) -> dict[str, Any]:
        data = self.cleaned_data
        synthetic = {**self._lengths("input_tokens", data["mean_input_tokens"], data.get("p95_input_tokens"),
                                     "p95_input_tokens"),
                     **self._lengths("output_tokens", data["mean_output_tokens"], data.get("p95_output_tokens"),
                                     "p95_output_tokens")}
        slo: dict[str, Any] = {"target": float(data["slo_attainment"])}
        for field, key in (("ttft_max_ms", "ttft_max_s"), ("tpot_max_ms", "tpot_max_s"), ("e2e_max_ms", "e2e_max_s")):
            if data.get(field):
                slo[key] = data[field] / 1000
        endpoint = {"url": data["endpoint_url"], "api": data["api"]}
        if data.get("model"):
            endpoint["model"] = data["model"]
        duration = float(data["level_duration_s"])
        key = data["sweep_key"]
        start = data["search_start"]
        profile = ({"kind": "concurrency", "concurrency": max(1, round(start))} if key == "concurrency"
                   else {"kind": "poisson", "rate": start})
        spec = {
            "endpoint": endpoint, "profile": profile, "duration_s": duration, "warmup_s": min(5.0, duration / 4),
            "cooldown_s": min(2.0, duration / 10), "prompts": {"synthetic": synthetic},
            "output_tokens": data["mean_output_tokens"], "slo": slo,
            "sweep": {"key": key, "search": {"start": start, "factor": data["search_factor"],
                                             "max": data["search_max"], "tolerance": 0.05,
                                             "max_levels": data["max_levels"]},
                      "level_duration_s": duration},
        }
        return {
            "candidate_id": data["candidate"].pk,
            "gpus_per_replica": data["gpus_per_replica"],
            "form": {"kind": FORM_KIND, "inputs": self.inputs()},
            "jobs": [{"kind": KIND, "spec": spec, "count": 1}],
        }

    def clean(self):
        cleaned = super().clean()
        pool, agent = cleaned.get("target_pool"), cleaned.get("target_agent")
        if pool is not None and agent is not None and agent.pool_id != pool.pk:
            self.add_error("target_agent", _("The agent is not in the chosen pool."))
        if not any(cleaned.get(name) for name in ("ttft_max_ms", "tpot_max_ms", "e2e_max_ms")) and not self.errors:
            self.add_error("ttft_max_ms", _("Give at least one latency limit: the SLO the capacity is measured at."))
        start, highest = cleaned.get("search_start"), cleaned.get("search_max")
        if start is not None and highest is not None and highest <= start:
            self.add_error("search_max", _("The highest level must be above the first."))
        if self.errors:
            return cleaned
        spec = self.build_plan_spec()
        if self.errors:
            return cleaned
        problem = load_spec_problem(spec["jobs"][0]["spec"])
        if problem:
            # The agent's own check refused the spec: the field it names carries its words.
            field = next((name for prefix, name in _PROBLEM_FIELDS if problem.startswith(prefix)), None)
            self.add_error(field, _("The agent would refuse this spec: %(problem)s") % {"problem": problem})
            return cleaned
        self.plan_spec = spec
        return cleaned


def initial_from_plan(plan) -> dict[str, Any] | None:
    """The form's values for a draft this form made (None when the plan was written as JSON)."""
    spec = plan.spec if isinstance(plan.spec, dict) else {}
    form = spec.get("form")
    if not isinstance(form, dict) or form.get("kind") != FORM_KIND or not isinstance(form.get("inputs"), dict):
        return None
    return {**form["inputs"], "candidate": spec.get("candidate_id"), "name": plan.name,
            "description": plan.description, "target_pool": plan.target_pool_id, "target_agent": plan.target_agent_id}
