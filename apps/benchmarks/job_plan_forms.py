"""The plan forms of the phase-3 jobs: resilience/operations, GPU acceptance, interconnect (all-reduce) and
checkpoint; and PLAN_FORMS, every plan form by its kind (the sweep's is in apps/benchmarks/plan_forms.py, with the
base they share).

Each is prefilled from the candidate and its workload summary and checked on submit with the agent's own parser
(dossier_agent.contract), so a spec the agent would refuse is refused here, on its field.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from dossier_agent.contract import acceptance_spec, allreduce_spec, checkpoint_spec, job_specs

from apps.benchmarks.plan_forms import JobPlanForm, SweepPlanForm, form_inputs_of
from apps.benchmarks.plan_spec import PlanSpecError, normalise_plan_spec
from apps.benchmarks.services import PlanError, check_declared_operations
from apps.catalog.models import SpecKey
from apps.quotes.models import Candidate

MIB = 2**20
DEVICE_CHOICES = [("cuda", gettext_lazy("the node's GPUs (cuda)")), ("auto", gettext_lazy("auto: GPUs when present")),
                  ("cpu", gettext_lazy("the CPU (a rehearsal, never compared with a GPU datasheet)"))]


def _agent_problem(check, spec: dict[str, Any], *args) -> str | None:
    try:
        check(spec, *args)
    except ValueError as error:
        return str(error)
    return None


# ----------------------------------------------------------------------------------------------------------------------
# Resilience / operations
# ----------------------------------------------------------------------------------------------------------------------

#: Above this the form does not prefill the load from the workload's arrival rate: the failure tests need a steady
#: stream of requests to see errors and recovery, not the production peak.
MAX_PREFILLED_RATE = 50.0
DEFAULT_REPEATS = 3

#: The failure scenarios in the reader's language; the spec's own name stays in brackets (the results show it).
SCENARIO_LABELS = {
    "kill_worker": gettext_lazy("a worker killed (kill_worker)"),
    "restart": gettext_lazy("a restart (restart)"),
    "bad_deploy": gettext_lazy("a bad deploy (bad_deploy)"),
    "drain": gettext_lazy("a drain (drain)"),
    "stop": gettext_lazy("a stop (stop)"),
}


class OperationsPlanForm(JobPlanForm):
    form_kind = "operations"
    slug = "operations"
    title = gettext_lazy("Resilience test")
    lead = gettext_lazy("Failures under a steady load (a worker killed, a restart, a bad deploy, a drain, a stop) and "
                        "cold starts: the time to detect, to recover and the requests lost. The agent acts on the "
                        "serving stack only through the operations its node declared.")
    problem_fields = (
        ("target", "target"), ("endpoint", "api"), ("load.rate_per_s", "rate_per_s"),
        ("load.timeout_s", "timeout_s"), ("load.output_tokens", "output_tokens"), ("scenarios", "scenarios"),
        ("nothing to do", "scenarios"), ("cold_start", "cold_start_repeats"),
        ("health.timeout_s", "health_timeout_s"), ("health.detect_timeout_s", "detect_timeout_s"),
    )

    target = forms.ChoiceField(
        label=gettext_lazy("Serving stack"), initial="declared", choices=[
            ("declared", gettext_lazy("the serving stack the node declared")),
            ("builtin_mock", gettext_lazy("the agent's built-in mock stack"))],
        help_text=gettext_lazy("A run on the mock stack is a rehearsal of the method: it never measures a GPU or "
                               "the candidate's serving stack."))
    api = forms.ChoiceField(label=gettext_lazy("API"), initial="chat", choices=[
        ("chat", gettext_lazy("chat completions")), ("completions", gettext_lazy("completions"))])
    model = forms.CharField(label=gettext_lazy("Model name at the endpoint"), max_length=200, initial="default",
                            widget=forms.TextInput(attrs={"translate": "no"}))
    scenarios = forms.MultipleChoiceField(
        label=gettext_lazy("Failure scenarios"), required=False, widget=forms.CheckboxSelectMultiple,
        choices=[(name, SCENARIO_LABELS.get(name, name)) for name in job_specs.SCENARIOS],
        help_text=gettext_lazy("Each runs under the load; the recovery is the node's default (a restart after a "
                               "killed worker, a bad deploy or a drain; a start after a stop)."))
    cold_start_repeats = forms.IntegerField(label=gettext_lazy("Cold starts (stop, then start)"), min_value=0,
                                            max_value=20, initial=DEFAULT_REPEATS)
    rate_per_s = forms.FloatField(
        label=gettext_lazy("Load during the scenarios (requests/s)"), min_value=0.1, max_value=10_000,
        help_text=gettext_lazy("Prefilled with the workload's peak (else mean) arrival rate, at most 50 requests/s."))
    output_tokens = forms.IntegerField(label=gettext_lazy("Output tokens per request"), min_value=1,
                                       max_value=100_000, help_text=gettext_lazy("The workload's mean."))
    timeout_s = forms.FloatField(label=gettext_lazy("Request timeout (s)"), min_value=0.1, max_value=3600,
                                 initial=job_specs.DEFAULT_LOAD["timeout_s"])
    health_timeout_s = forms.FloatField(label=gettext_lazy("Longest wait for healthy again (s)"), min_value=1,
                                        max_value=7200, initial=job_specs.DEFAULT_HEALTH["timeout_s"])
    detect_timeout_s = forms.FloatField(
        label=gettext_lazy("Longest wait to detect the failure (s)"), min_value=1, max_value=3600,
        initial=job_specs.DEFAULT_HEALTH["detect_timeout_s"],
        help_text=gettext_lazy("The recovery runs once the failure is detected, or after this wait."))

    @classmethod
    def job_initial(cls, candidate: Candidate) -> dict[str, Any]:
        summary = candidate.workload_summary
        rate = summary.arrival_rate_peak or summary.arrival_rate_mean
        return {
            "scenarios": ["kill_worker", "restart"],
            "rate_per_s": round(min(max(float(rate), 0.1), MAX_PREFILLED_RATE), 3) if rate else
            job_specs.DEFAULT_LOAD["rate_per_s"],
            "output_tokens": summary.mean_output_tokens or job_specs.DEFAULT_LOAD["output_tokens"],
        }

    def build_job(self) -> dict[str, Any]:
        data = self.cleaned_data
        spec = {
            "target": data["target"],
            "endpoint": {"api": data["api"], "model": data["model"]},
            "load": {"rate_per_s": data["rate_per_s"], "timeout_s": data["timeout_s"],
                     "output_tokens": data["output_tokens"]},
            "scenarios": [{"name": name} for name in data["scenarios"]],
            "cold_start": {"repeats": data["cold_start_repeats"]},
            "health": {"timeout_s": data["health_timeout_s"], "detect_timeout_s": data["detect_timeout_s"]},
        }
        return {"kind": "operations", "spec": spec, "count": 1}

    def spec_problem(self, entry: dict[str, Any]) -> str | None:
        return _agent_problem(job_specs.parse_operations_spec, entry["spec"])

    def clean(self):
        cleaned = super().clean()
        if self.plan_spec is None:
            return cleaned
        # The server's own refusal at save: an agent (or the pool) that does not declare the operations.
        try:
            check_declared_operations(entries=normalise_plan_spec(self.plan_spec), target_pool=cleaned["target_pool"],
                                      target_agent=cleaned.get("target_agent"))
        except (PlanError, PlanSpecError) as error:
            self.add_error("target_agent" if cleaned.get("target_agent") else "target_pool", str(error))
            self.plan_spec = None
        return cleaned


# ----------------------------------------------------------------------------------------------------------------------
# GPU acceptance
# ----------------------------------------------------------------------------------------------------------------------

#: The catalog's figures → the agent's datasheet keys, with the factor from the catalog's unit to the agent's.
_DATASHEET_FIGURES = (
    (SpecKey.MEMORY_BANDWIDTH_TBPS, ("memory_bandwidth_bytes_per_s",), 1e12),
    (SpecKey.BF16_DENSE_TFLOPS, ("matmul_flops_per_s", "bf16"), 1e12),
    (SpecKey.FP8_DENSE_TFLOPS, ("matmul_flops_per_s", "fp8"), 1e12),
)


def candidate_datasheet(candidate: Candidate) -> dict[str, Any]:
    """The datasheet the acceptance job compares with: the catalog's figures of the quote's GPU, each source named
    (an empty dict when the quote names no GPU)."""
    gpu = candidate.quote.gpu
    if gpu is None:
        return {}
    datasheet: dict[str, Any] = {"gpu": gpu.display_name, "host_link_bytes_per_s": None}
    sources = []
    for key, path, factor in _DATASHEET_FIGURES:
        figure = gpu.spec(key)
        if figure is None:
            continue
        value = float(figure.value) * factor
        if len(path) == 1:
            datasheet[path[0]] = value
        else:
            datasheet.setdefault(path[0], {})[path[1]] = value
        sources.append(f"{figure.key} {figure.value.normalize():f} {figure.unit}: {figure.source} "
                       f"(as of {figure.as_of.isoformat()})")
    datasheet["source"] = f"catalog: {gpu.display_name}: " + ("; ".join(sources) if sources else "no figures")
    return datasheet


class AcceptancePlanForm(JobPlanForm):
    form_kind = "acceptance"
    slug = "acceptance"
    title = gettext_lazy("GPU acceptance")
    lead = gettext_lazy("Is each GPU as fast as its datasheet says, and healthy? Memory bandwidth, the matrix product "
                        "at the workload's precision and the host link, each against the catalog's figure for the "
                        "quote's GPU, while NVML (and DCGM when installed) watches for errors.")
    problem_fields = (("precision", "precision"), ("gpus", "gpus"), ("sizes.copy_bytes", "copy_mib"),
                      ("sizes.matmul_n", "matmul_n"), ("sizes.host_bytes", "host_mib"), ("datasheet", "candidate"),
                      ("dcgm", "dcgm"), ("device", "device"))

    device = forms.ChoiceField(label=gettext_lazy("Device"), initial="cuda", choices=DEVICE_CHOICES)
    gpus = forms.CharField(label=gettext_lazy("GPUs"), max_length=200, initial="all",
                           widget=forms.TextInput(attrs={"translate": "no"}),
                           help_text=gettext_lazy("all, or the CUDA device indices separated by commas (0, 1)."))
    precision = forms.CharField(label=gettext_lazy("Precision of the matrix product"), max_length=20,
                                widget=forms.TextInput(attrs={"translate": "no"}),
                                help_text=gettext_lazy("The workload's precision (fp32, tf32, bf16, fp16, fp8; a "
                                                       "weight-only quantisation is measured in bf16)."))
    copy_mib = forms.IntegerField(label=gettext_lazy("Device copy buffer (MiB)"), min_value=1, max_value=256 * 1024,
                                  initial=acceptance_spec.DEFAULT_SIZES["cuda"]["copy_bytes"] // MIB)
    matmul_n = forms.IntegerField(label=gettext_lazy("Matrix size (n × n)"), min_value=16, max_value=65_536,
                                  initial=acceptance_spec.DEFAULT_SIZES["cuda"]["matmul_n"])
    host_mib = forms.IntegerField(label=gettext_lazy("Host transfer buffer (MiB)"), min_value=0,
                                  max_value=256 * 1024,
                                  initial=acceptance_spec.DEFAULT_SIZES["cuda"]["host_bytes"] // MIB,
                                  help_text=gettext_lazy("0 skips the host link checks."))
    dcgm = forms.BooleanField(label=gettext_lazy("Run DCGM's diagnostic (level 1) when installed"), required=False,
                              initial=True)

    @classmethod
    def job_initial(cls, candidate: Candidate) -> dict[str, Any]:
        return {"precision": candidate.workload_summary.precision or "bf16"}

    def check_inputs(self, cleaned: dict[str, Any]) -> None:
        candidate = cleaned.get("candidate")
        if candidate is not None and candidate.quote.gpu_id is None:
            self.add_error("candidate", _("This candidate's quote names no catalog GPU: there is no datasheet to "
                                          "compare with."))

    def build_job(self) -> dict[str, Any]:
        data = self.cleaned_data
        text = data["gpus"].strip()
        gpus: Any = text
        if text != "all":
            parts = [part.strip() for part in text.split(",") if part.strip()]
            gpus = [int(part) for part in parts] if parts and all(part.isdigit() for part in parts) else text
        spec = {
            "device": data["device"], "gpus": gpus, "precision": data["precision"].strip(),
            "datasheet": candidate_datasheet(data["candidate"]),
            "sizes": {"copy_bytes": data["copy_mib"] * MIB, "matmul_n": data["matmul_n"],
                      "host_bytes": data["host_mib"] * MIB},
            "dcgm": {"enabled": data["dcgm"]},
        }
        return {"kind": "acceptance", "spec": spec, "count": 1}

    def spec_problem(self, entry: dict[str, Any]) -> str | None:
        label = "cpu" if entry["spec"]["device"] == "cpu" else "cuda"
        return _agent_problem(acceptance_spec.parse_spec, entry["spec"], label)


# ----------------------------------------------------------------------------------------------------------------------
# Interconnect (all-reduce within the node)
# ----------------------------------------------------------------------------------------------------------------------

#: The workload's precision → the all-reduce's element type (gradients and activations travel in the compute type;
#: an 8-bit or 4-bit format computes in bf16).
_ALLREDUCE_DTYPES = {"fp32": "float32", "fp16": "fp16"}


class AllReducePlanForm(JobPlanForm):
    form_kind = "interconnect"
    slug = "interconnect"
    title = gettext_lazy("Interconnect (all-reduce)")
    lead = gettext_lazy("The all-reduce bus bandwidth between the GPUs of one node (NCCL on GPUs, gloo on a CPU), "
                        "per message size, as nccl-tests defines it. Across nodes a job group is written as JSON.")
    problem_fields = (("sizes", "min_bytes"), ("dtype", "dtype"), ("local_ranks", "local_ranks"),
                      ("an all-reduce needs", "local_ranks"), ("backend", "local_ranks"), ("device", "local_ranks"))

    local_ranks = forms.IntegerField(label=gettext_lazy("Ranks (one per GPU)"), min_value=1, max_value=1024,
                                     help_text=gettext_lazy("Prefilled with the quote's GPUs per node."))
    min_bytes = forms.IntegerField(label=gettext_lazy("Smallest message (bytes)"), min_value=1,
                                   initial=allreduce_spec.DEFAULT_SIZES["cuda"]["min_bytes"])
    max_bytes = forms.IntegerField(label=gettext_lazy("Largest message (bytes)"), min_value=1,
                                   initial=allreduce_spec.DEFAULT_SIZES["cuda"]["max_bytes"])
    factor = forms.IntegerField(label=gettext_lazy("Size step factor"), min_value=2, max_value=64,
                                initial=allreduce_spec.DEFAULT_SIZES["cuda"]["factor"])
    dtype = forms.ChoiceField(label=gettext_lazy("Element type"), choices=[(name, name) for name in
                                                                          allreduce_spec.DTYPES],
                              widget=forms.Select(attrs={"translate": "no"}),
                              help_text=gettext_lazy("From the workload's precision."))
    timeout_s = forms.IntegerField(label=gettext_lazy("Time limit (s)"), min_value=10, max_value=7200, initial=600)

    @classmethod
    def job_initial(cls, candidate: Candidate) -> dict[str, Any]:
        precision = candidate.workload_summary.precision
        return {"local_ranks": candidate.quote.gpus_per_node,
                "dtype": _ALLREDUCE_DTYPES.get(precision, "bf16")}

    def check_inputs(self, cleaned: dict[str, Any]) -> None:
        low, high = cleaned.get("min_bytes"), cleaned.get("max_bytes")
        if low is not None and high is not None and high < low:
            self.add_error("max_bytes", _("The largest message must not be below the smallest."))

    def build_job(self) -> dict[str, Any]:
        data = self.cleaned_data
        spec = {"backend": "auto", "local_ranks": data["local_ranks"], "dtype": data["dtype"],
                "sizes": {"min_bytes": data["min_bytes"], "max_bytes": data["max_bytes"], "factor": data["factor"]},
                "timeout_s": data["timeout_s"]}
        return {"kind": "allreduce", "spec": spec, "count": 1}

    def spec_problem(self, entry: dict[str, Any]) -> str | None:
        return _agent_problem(allreduce_spec.check_spec, entry["spec"])


# ----------------------------------------------------------------------------------------------------------------------
# Checkpoint
# ----------------------------------------------------------------------------------------------------------------------


def _training_gpus(summary) -> int | None:
    """The GPUs the training job holds: data × tensor × pipeline parallel, when the workload states any of them."""
    parts = (summary.data_parallel_gpus, summary.tensor_parallel, summary.pipeline_parallel)
    if not any(parts):
        return None
    total = 1
    for part in parts:
        total *= part or 1
    return total


class CheckpointPlanForm(JobPlanForm):
    form_kind = "checkpoint"
    slug = "checkpoint"
    title = gettext_lazy("Checkpoint save and restore")
    lead = gettext_lazy("Saves a proxy training state on each target folder, kills the trainer, restores the state in "
                        "a fresh process and checks it bit for bit; reports the write and read throughput and the "
                        "work lost per failure at the workload's checkpoint interval.")
    problem_fields = (("targets", "targets"), ("checkpoint target", "targets"), ("state_bytes", "state_mib"),
                      ("timeout_s", "timeout_s"), ("workload", "checkpoint_interval_minutes"))

    targets = forms.CharField(
        label=gettext_lazy("Target folders"), required=False,
        widget=forms.Textarea(attrs={"rows": 3, "translate": "no", "placeholder": "nvme /mnt/nvme"}),
        help_text=gettext_lazy("One per line: a name, a space, the folder's absolute path on the node (it must "
                               "exist). Empty: the job's own work folder."))
    device = forms.ChoiceField(label=gettext_lazy("Device"), initial="auto", choices=DEVICE_CHOICES)
    state_mib = forms.IntegerField(label=gettext_lazy("Training state of the proxy (MiB)"), min_value=1,
                                   max_value=1024 * 1024, initial=1024,
                                   help_text=gettext_lazy("Model and optimizer state (fp32 weights, AdamW)."))
    checkpoint_interval_minutes = forms.IntegerField(
        label=gettext_lazy("Checkpoint interval of the workload (minutes)"), min_value=1, max_value=10_080,
        required=False)
    gpus = forms.IntegerField(label=gettext_lazy("GPUs the training job holds"), min_value=1, max_value=1_000_000,
                              required=False, help_text=gettext_lazy("The lost work per failure is theirs."))
    checkpoint_gib = forms.FloatField(
        label=gettext_lazy("Checkpoint this node writes (GiB)"), min_value=0.001, required=False,
        help_text=gettext_lazy("Projects the restore time to the workload's checkpoint size."))
    timeout_s = forms.IntegerField(label=gettext_lazy("Time limit per target (s)"), min_value=10, max_value=7200,
                                   initial=600)

    @classmethod
    def job_initial(cls, candidate: Candidate) -> dict[str, Any]:
        summary = candidate.workload_summary
        return {"checkpoint_interval_minutes": summary.checkpoint_interval_minutes,
                "gpus": _training_gpus(summary) or candidate.quote.gpus_quoted}

    def clean_targets(self) -> str:
        text = self.cleaned_data["targets"].strip()
        for number, line in enumerate(text.splitlines(), start=1):
            parts = line.split(None, 1)
            if not parts:
                continue
            if len(parts) != 2 or not parts[1].strip().startswith("/"):
                raise forms.ValidationError(
                    _("Line %(line)d: give a name, a space and the folder's absolute path.") % {"line": number})
        return text

    def build_job(self) -> dict[str, Any]:
        data = self.cleaned_data
        targets = [{"name": name, "path": path.strip()} for name, path in
                   (line.split(None, 1) for line in data["targets"].splitlines() if line.strip())]
        workload: dict[str, Any] = {}
        if data.get("checkpoint_interval_minutes"):
            workload["checkpoint_interval_s"] = data["checkpoint_interval_minutes"] * 60
        if data.get("gpus"):
            workload["gpus"] = data["gpus"]
        if data.get("checkpoint_gib"):
            workload["checkpoint_bytes"] = data["checkpoint_gib"] * 2**30
        spec: dict[str, Any] = {"device": data["device"], "state_bytes": data["state_mib"] * MIB,
                                "timeout_s": data["timeout_s"], "workload": workload}
        if targets:
            spec["targets"] = targets
        return {"kind": "checkpoint", "spec": spec, "count": 1}

    def spec_problem(self, entry: dict[str, Any]) -> str | None:
        return _agent_problem(checkpoint_spec.check_spec, entry["spec"])


# ----------------------------------------------------------------------------------------------------------------------
# Every plan form
# ----------------------------------------------------------------------------------------------------------------------

PLAN_FORMS: dict[str, type[JobPlanForm]] = {
    form.form_kind: form
    for form in (SweepPlanForm, OperationsPlanForm, AcceptancePlanForm, AllReducePlanForm, CheckpointPlanForm)
}


def form_of_plan(plan) -> type[JobPlanForm] | None:
    """The form that made the plan (None when it was written as JSON, or by a form that no longer exists)."""
    found = form_inputs_of(plan)
    return PLAN_FORMS.get(found[0]) if found else None


def plan_form_links(candidate: Candidate | None = None) -> list[dict[str, Any]]:
    """(title, URL) of every plan form's create page, prefilled from the candidate when one is given."""
    query = f"?candidate={candidate.pk}" if candidate is not None else ""
    return [{"title": form.title, "slug": form.slug, "url": reverse(f"benchmarks:plan-{form.slug}-create") + query}
            for form in PLAN_FORMS.values()]
