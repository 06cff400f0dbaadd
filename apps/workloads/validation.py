"""The checks of a workload summary that span fields, and the estimator's errors put on the summary's fields.

WorkloadSummary.clean() calls summary_errors(), so the form, the service and the API reject exactly the same input.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from apps.workloads import estimates, rules
from apps.workloads.memory.errors import ShapeError

# (smaller, larger, message): the first may not exceed the second.
ORDERED_PAIRS = (
    ("mean_input_tokens", "p95_input_tokens", gettext_noop("The mean input cannot exceed the p95 input.")),
    ("mean_output_tokens", "p95_output_tokens", gettext_noop("The mean output cannot exceed the p95 output.")),
    (
        "concurrent_sessions_mean",
        "concurrent_sessions_peak",
        gettext_noop("The mean concurrency cannot exceed the peak."),
    ),
    ("arrival_rate_mean", "arrival_rate_peak", gettext_noop("The mean arrival rate cannot exceed the peak.")),
    ("p95_ttft_ms", "p99_ttft_ms", gettext_noop("The p95 limit cannot exceed the p99 limit.")),
    ("p95_tpot_ms", "p99_tpot_ms", gettext_noop("The p95 limit cannot exceed the p99 limit.")),
    ("p95_e2e_ms", "p99_e2e_ms", gettext_noop("The p95 limit cannot exceed the p99 limit.")),
    ("active_params", "params", gettext_noop("Active parameters cannot exceed the total parameters.")),
)

# Estimator inputs that are not summary fields of the same name, and the summary field that states them.
REQUEST_FIELDS = {
    "config": "config_json",
    "sequence_length": "training_sequence_length",
    "micro_batch_size": "batch_size",
    "max_batched_tokens": "batch_size",
    "zero_stage": "zero_stage",
    "data_parallel_gpus": "data_parallel_gpus",
    "lora_rank": "lora_rank",
    "recompute": "recompute",
    "tensor_parallel": "tensor_parallel",
    "sequence_parallel": "sequence_parallel",
    "pipeline_parallel": "pipeline_parallel",
    "optimizer_offload": "optimizer_offload",
    "optimizer_bits": "optimizer_bits",
    "kv_cache_precision": "kv_cache_precision",
}
SUMMARY_SHAPE_FIELDS = frozenset(estimates.SHAPE_FIELDS) | {"architecture", "precision", "tied_embeddings"}
# The fields whose values go into the estimate: checked one by one first, so that a value the field itself rejects
# is reported once, by the field, and not a second time by the estimator.
ESTIMATE_INPUT_FIELDS = (
    *estimates.SHAPE_FIELDS,
    "architecture",
    "precision",
    "kv_cache_precision",
    "p95_input_tokens",
    "p95_output_tokens",
    "image_width_px",
    "image_height_px",
    "video_duration_seconds",
    "video_frames_per_second",
    "batch_size",
    "concurrent_sessions_peak",
    "training_sequence_length",
    "zero_stage",
    "data_parallel_gpus",
    "recompute",
    "tensor_parallel",
    "sequence_parallel",
    "pipeline_parallel",
    "optimizer_offload",
    "optimizer_bits",
    "lora_rank",
    "workload_type",
)


def shape_error_message(error: ShapeError) -> str:
    """The estimator's message in the active language."""
    params = dict(error.params)
    if isinstance(params.get("purpose"), str):
        params["purpose"] = _(params["purpose"])
    template = _(error.template)
    try:
        return template % params if params else template
    except (KeyError, TypeError, ValueError):
        return error.message


def summary_field_for(error: ShapeError, summary: Any) -> str:
    """The summary field an estimator error belongs to (NON_FIELD_ERRORS when none does)."""
    name = error.field
    if name in SUMMARY_SHAPE_FIELDS:
        return name
    if name in estimates.EXTRA_SHAPE_FIELDS:
        return "shape_extras"
    if name in REQUEST_FIELDS:
        return REQUEST_FIELDS[name]
    if name == "p95_context_tokens":
        return "image_width_px" if getattr(summary, "workload_type", "") in rules.MEDIA else "p95_input_tokens"
    if name == "concurrent_sessions":
        return "concurrent_sessions_peak" if getattr(summary, "concurrent_sessions_peak", None) else "batch_size"
    return NON_FIELD_ERRORS


def _fields_accept_their_values(summary: Any, names: tuple[str, ...]) -> bool:
    for name in names:
        model_field = summary._meta.get_field(name)
        value = getattr(summary, model_field.attname)
        if value in model_field.empty_values:
            continue
        try:
            model_field.clean(value, summary)
        except ValidationError:
            return False
    return True


def summary_errors(summary: Any) -> dict[str, list[str]]:
    """{field: [messages]} for everything wrong with the summary that no single field can see."""
    errors: dict[str, list[str]] = defaultdict(list)
    if summary.workload_id and summary.team_id and summary.workload.team_id != summary.team_id:
        errors[NON_FIELD_ERRORS].append(_("A version belongs to the team of its workload."))

    for smaller, larger, message in ORDERED_PAIRS:
        low, high = getattr(summary, smaller), getattr(summary, larger)
        if low is None or high is None or not _fields_accept_their_values(summary, (smaller, larger)):
            continue
        if low > high:
            errors[smaller].append(_(message))

    if summary.quality_acceptance_rate is not None and not summary.quality_acceptance_source.strip():
        errors["quality_acceptance_source"].append(
            _("Say where the acceptance rate comes from (an evaluation run, a pilot, a vendor report).")
        )
    if summary.expected_failures_per_1000_gpu_hours is not None and not summary.failure_rate_source.strip():
        errors["failure_rate_source"].append(_("Say where the failure rate comes from."))
    if summary.metric_differs_from_proposal and not summary.decision_metric_reason.strip():
        errors["decision_metric_reason"].append(
            _("Explain why this workload is judged by another metric than the one proposed for its type.")
        )

    extras = summary.shape_extras
    if not isinstance(extras, dict):
        errors["shape_extras"].append(_("Must be an object of shape values."))
    else:
        unknown = sorted(set(extras) - set(estimates.EXTRA_SHAPE_FIELDS))
        if unknown:
            errors["shape_extras"].append(_("Unknown shape values: %(names)s.") % {"names": ", ".join(unknown)})

    if not errors and _fields_accept_their_values(summary, ESTIMATE_INPUT_FIELDS):
        _estimator_errors(summary, errors)
    return dict(errors)


def _estimator_errors(summary: Any, errors: dict[str, list[str]]) -> None:
    """What the estimator rejects: the shape on its own, then the shape with the request the summary implies."""
    try:
        estimates.model_shape(summary)
        plan = estimates.plan_for(summary)
        plan.breakdown()
    except estimates.MissingInput:
        return  # a draft may be incomplete; the readiness gate lists what is missing
    except ShapeError as error:
        errors[summary_field_for(error, summary)].append(shape_error_message(error))
