"""The plan forms' shared base, and the throughput/capacity sweep plan form.

A plan form is prefilled from the candidate and its workload summary, with the candidate chosen explicitly, and
produces the plan JSON the JSON view shows and edits (apps/benchmarks/plan_spec.py), checked with the agent's own
parser before it is saved: a spec the agent would refuse is refused on submit, on the field it concerns.

The form's inputs are kept in the plan under "form" ({"kind": ..., "inputs": ...}) so that a draft made in a form
opens in that form again; the job's spec is rebuilt from them on each save, never edited in two places. The other
job kinds' forms are in apps/benchmarks/job_plan_forms.py, which also lists every form (PLAN_FORMS).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, ClassVar

from django import forms
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from dossier_agent.contract import lengths

from apps.benchmarks.plan_spec import load_spec_problem
from apps.fleet.models import Agent, AgentPool
from apps.quotes.models import Candidate

#: The fields every plan form has; the others are the job's inputs (kept under spec["form"]["inputs"]).
COMMON_FIELDS = ("candidate", "name", "description", "target_pool", "target_agent")


def candidate_agent(candidate: Candidate) -> Agent | None:
    """An active agent on the candidate's node (the one registered for it first), or None."""
    return (Agent.objects.filter(candidate=candidate, revoked_at__isnull=True, pool__is_active=True)
            .select_related("pool").order_by("pk").first())


def form_inputs_of(plan) -> tuple[str, dict[str, Any]] | None:
    """(form kind, inputs) of a plan a form made, or None when it was written as JSON."""
    spec = plan.spec if isinstance(plan.spec, dict) else {}
    form = spec.get("form")
    if not isinstance(form, dict) or not isinstance(form.get("kind"), str) or not isinstance(form.get("inputs"), dict):
        return None
    return form["kind"], form["inputs"]


class JobPlanForm(forms.Form):
    """One job of one kind for one candidate. A subclass declares its job's fields and builds the job entry
    (`build_job`), names the agent's check of it (`spec_problem`) and the field each of its messages belongs to
    (`problem_fields`: the first words of the agent's message → the field)."""

    form_kind: ClassVar[str]
    #: in the form's URLs: plans/new/<slug>/ and plans/<pk>/edit/<slug>/
    slug: ClassVar[str]
    title: ClassVar[Any]
    lead: ClassVar[Any] = ""
    #: shown on the form but not kept with the plan (figures of the workload the form shows for reference)
    derived_fields: ClassVar[tuple[str, ...]] = ()
    problem_fields: ClassVar[tuple[tuple[str, str], ...]] = ()
    candidate_help: ClassVar[Any] = ""
    #: templates receive the class itself (its title and lead): they must not call it
    do_not_call_in_templates = True

    candidate = forms.ModelChoiceField(
        label=gettext_lazy("Candidate measured"), queryset=Candidate.objects.none(),
        widget=forms.Select(attrs={"translate": "no"}),
        help_text=gettext_lazy("Its results go to this candidate (its phase-3 and phase-4 inputs)."))
    name = forms.CharField(label=gettext_lazy("Name"), max_length=200)
    description = forms.CharField(label=gettext_lazy("Description"), required=False,
                                  widget=forms.Textarea(attrs={"rows": 2}))
    target_pool = forms.ModelChoiceField(label=gettext_lazy("Agent pool"), queryset=AgentPool.objects.none(),
                                         widget=forms.Select(attrs={"translate": "no"}))
    target_agent = forms.ModelChoiceField(
        label=gettext_lazy("Agent"), queryset=Agent.objects.none(), required=False,
        widget=forms.Select(attrs={"translate": "no"}),
        help_text=gettext_lazy("Prefilled with an agent on the candidate's node; empty lets any agent of the pool "
                               "run the job."))

    def __init__(self, *args, team, **kwargs):
        super().__init__(*args, **kwargs)
        self.team = team
        self.fields["candidate"].queryset = Candidate.objects.for_team(team).select_related("quote")
        if self.candidate_help:
            self.fields["candidate"].help_text = self.candidate_help
        self.fields["target_pool"].queryset = AgentPool.objects.for_team(team).filter(is_active=True)
        self.fields["target_agent"].queryset = Agent.objects.filter(pool__team=team, revoked_at__isnull=True)
        self.plan_spec: dict[str, Any] | None = None

    # --- starting values -------------------------------------------------------------------------------------------

    @classmethod
    def initial_from_candidate(cls, candidate: Candidate) -> dict[str, Any]:
        """The form's starting values: the candidate, its node's agent, and the job's values from its workload."""
        initial: dict[str, Any] = {
            "candidate": candidate.pk,
            "name": (_("%(kind)s: %(candidate)s") % {"kind": cls.title, "candidate": candidate.label})[:200],
        }
        agent = candidate_agent(candidate)
        if agent is not None:
            initial.update(target_pool=agent.pool_id, target_agent=agent.pk)
        initial.update(cls.job_initial(candidate))
        return initial

    @classmethod
    def job_initial(cls, candidate: Candidate) -> dict[str, Any]:
        return {}

    @classmethod
    def initial_from_plan(cls, plan) -> dict[str, Any] | None:
        """The form's values for a draft this form made (None when another form made it, or it was written as
        JSON)."""
        found = form_inputs_of(plan)
        if found is None or found[0] != cls.form_kind:
            return None
        return {**found[1], "candidate": plan.spec.get("candidate_id"), "name": plan.name,
                "description": plan.description, "target_pool": plan.target_pool_id,
                "target_agent": plan.target_agent_id}

    # --- the plan JSON ---------------------------------------------------------------------------------------------

    def inputs(self) -> dict[str, Any]:
        """The cleaned inputs as JSON values (kept in the plan under "form")."""
        out = {}
        for name in self.fields:
            if name in COMMON_FIELDS or name in self.derived_fields:
                continue
            value = self.cleaned_data.get(name)
            out[name] = str(value) if isinstance(value, Decimal) else value
        return out

    def build_job(self) -> dict[str, Any]:
        """The plan's job entry ({"kind", "spec", ...}) from the cleaned data; add_error for a value it cannot use."""
        raise NotImplementedError

    def spec_problem(self, entry: dict[str, Any]) -> str | None:
        """What the agent's own parser says about the job's spec, or None when it would run it."""
        raise NotImplementedError

    def plan_extras(self) -> dict[str, Any]:
        """Keys of the plan besides the candidate, the form and the jobs."""
        return {}

    def check_inputs(self, cleaned: dict[str, Any]) -> None:
        """Checks across fields before the job is built (add_error)."""

    def problem_field(self, problem: str) -> str | None:
        return next((name for prefix, name in self.problem_fields if problem.startswith(prefix)), None)

    def clean(self):
        cleaned = super().clean()
        pool, agent = cleaned.get("target_pool"), cleaned.get("target_agent")
        if pool is not None and agent is not None and agent.pool_id != pool.pk:
            self.add_error("target_agent", _("The agent is not in the chosen pool."))
        self.check_inputs(cleaned)
        if self.errors:
            return cleaned
        entry = self.build_job()
        if self.errors:
            return cleaned
        problem = self.spec_problem(entry)
        if problem:
            # The agent's own check refused the spec: the field it names carries its words.
            self.add_error(self.problem_field(problem),
                           _("The agent would refuse this spec: %(problem)s") % {"problem": problem})
            return cleaned
        self.plan_spec = {
            "candidate_id": cleaned["candidate"].pk,
            **self.plan_extras(),
            "form": {"kind": self.form_kind, "inputs": self.inputs()},
            "jobs": [entry],
        }
        return cleaned


# ----------------------------------------------------------------------------------------------------------------------
# The throughput/capacity sweep
# ----------------------------------------------------------------------------------------------------------------------

FORM_KIND = "throughput_sweep"
KIND = "throughput"
#: The SLO of the workload is a p95: 95 % of the requests must meet each limit.
DEFAULT_ATTAINMENT = Decimal("0.95")
#: Where the sweep sends its load: the node's own serving stack, or the agent's built-in mock (a rehearsal).
ENDPOINT_NODE, ENDPOINT_MOCK = "node", "builtin_mock"
#: The mock's delays in a rehearsal (the agent's mockserver flags): a first token after 50 ms, then 10 ms a token.
MOCK_DELAYS = {"ttft-ms": 50, "token-ms": 10}

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


class SweepPlanForm(JobPlanForm):
    form_kind = FORM_KIND
    slug = "sweep"
    title = gettext_lazy("Throughput sweep")
    lead = gettext_lazy("A capacity search: the offered load steps up until a level misses the SLO, then bisects. "
                        "The capacity at the SLO, the latency and the failure rate go to the chosen candidate's "
                        "phase-4 inputs.")
    derived_fields = ("target_rate",)
    problem_fields = _PROBLEM_FIELDS
    candidate_help = gettext_lazy("Its phase-4 inputs receive the measured capacity, latency and failure rate.")

    endpoint_kind = forms.ChoiceField(
        label=gettext_lazy("Serving endpoint"), initial=ENDPOINT_NODE, required=False, widget=forms.RadioSelect,
        choices=[
            (ENDPOINT_NODE, gettext_lazy("the node's serving stack, at the URL below")),
            (ENDPOINT_MOCK, gettext_lazy("the agent's built-in mock stack: a rehearsal of the procedure, never a "
                                         "measurement of a GPU")),
        ])
    endpoint_url = forms.URLField(
        label=gettext_lazy("Endpoint URL"), max_length=500, assume_scheme="http", required=False,
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

    @classmethod
    def job_initial(cls, candidate: Candidate) -> dict[str, Any]:
        """The workload's request shape, SLO and target rate; the quote's GPUs per node."""
        summary = candidate.workload_summary
        peak = summary.arrival_rate_peak or summary.arrival_rate_mean
        target = float(peak) if peak else None
        return {
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

    def _lengths(self, prefix: str, mean: int, p95: int | None, field: str) -> dict[str, Any]:
        try:
            return lengths.synthetic_lengths(prefix, mean, p95)
        except lengths.LengthError as error:
            self.add_error(field, str(error))
            return {}

    def build_job(self) -> dict[str, Any]:
        data = self.cleaned_data
        synthetic = {**self._lengths("input_tokens", data["mean_input_tokens"], data.get("p95_input_tokens"),
                                     "p95_input_tokens"),
                     **self._lengths("output_tokens", data["mean_output_tokens"], data.get("p95_output_tokens"),
                                     "p95_output_tokens")}
        slo: dict[str, Any] = {"target": float(data["slo_attainment"])}
        for field, key in (("ttft_max_ms", "ttft_max_s"), ("tpot_max_ms", "tpot_max_s"), ("e2e_max_ms", "e2e_max_s")):
            if data.get(field):
                slo[key] = data[field] / 1000
        if data.get("endpoint_kind") == ENDPOINT_MOCK:
            endpoint = {"url": "builtin-mock", "api": data["api"], "mock": dict(MOCK_DELAYS)}
        else:
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
        return {"kind": KIND, "spec": spec, "count": 1}

    def plan_extras(self) -> dict[str, Any]:
        return {"gpus_per_replica": self.cleaned_data["gpus_per_replica"]}

    def spec_problem(self, entry: dict[str, Any]) -> str | None:
        return load_spec_problem(entry["spec"])

    def check_inputs(self, cleaned: dict[str, Any]) -> None:
        if cleaned.get("endpoint_kind") != ENDPOINT_MOCK and not cleaned.get("endpoint_url") \
                and "endpoint_url" not in self.errors:
            self.add_error("endpoint_url", _("Give the endpoint's URL, or choose the agent's built-in mock stack."))
        if not any(cleaned.get(name) for name in ("ttft_max_ms", "tpot_max_ms", "e2e_max_ms")) and not self.errors:
            self.add_error("ttft_max_ms", _("Give at least one latency limit: the SLO the capacity is measured at."))
        start, highest = cleaned.get("search_start"), cleaned.get("search_max")
        if start is not None and highest is not None and highest <= start:
            self.add_error("search_max", _("The highest level must be above the first."))
