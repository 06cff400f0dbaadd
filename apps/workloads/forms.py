"""The workload summary form: the eight fields of step 1 in sections, filled by hand or from a pasted or uploaded
config.json. It validates exactly as the services do (the model's full_clean), so a valid form always saves."""

from __future__ import annotations

import json
from decimal import Decimal

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from apps.workloads import estimates
from apps.workloads.memory.errors import ShapeError
from apps.workloads.memory.hf_config import parse_hf_config_json
from apps.workloads.memory.shapes import SHAPE_LIMITS
from apps.workloads.models import Tool, WorkloadSummary
from apps.workloads.services import (
    DECISION_METRIC_FIELDS,
    EDITABLE_FIELDS,
    LATENCY_FIELDS,
    MODEL_SHAPE_FIELDS,
    OPERATIONS_FIELDS,
    REQUEST_SHAPE_FIELDS,
    SUCCESS_FIELDS,
    TRAINING_FIELDS,
)
from apps.workloads.validation import shape_error_message

BILLION = 10**9
MAX_CONFIG_BYTES = 1_000_000  # a config.json is a few kilobytes; a megabyte is certainly not one

#: The form's sections in the order of step 1 (title, fields). The template renders them in this order.
SECTIONS: tuple[tuple[str, object, tuple[str, ...]], ...] = (
    ("workload", _("Workload"), ("name", "workload_type", "notes")),
    ("model", _("Model shape"), MODEL_SHAPE_FIELDS),
    ("request", _("Request shape"), REQUEST_SHAPE_FIELDS),
    ("training", _("Training and fine-tuning"), TRAINING_FIELDS),
    ("success", _("Unit of success"), SUCCESS_FIELDS),
    ("latency", _("Latency target"), LATENCY_FIELDS),
    ("operations", _("Operating mode, boundary and tools"), OPERATIONS_FIELDS),
    ("metric", _("Decision metric"), DECISION_METRIC_FIELDS),
)
FORM_FIELDS = tuple(name for _key, _title, names in SECTIONS for name in names)
CONFIG_FIELDS = ("config_json_text", "config_json_file", "applied_config", "discard_shape_extras")
STATED_COUNTS = ("params", "active_params")


class BillionsField(forms.DecimalField):
    """A count entered in billions (8.03 → 8,030,000,000), stored as a whole number."""

    def __init__(self, *, maximum: int, **kwargs):
        self.maximum = maximum
        kwargs.setdefault("max_digits", 20)
        kwargs.setdefault("decimal_places", 9)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, int) and not isinstance(value, bool):
            return format((Decimal(value) / BILLION).normalize(), "f")
        return super().prepare_value(value)

    def to_python(self, value):
        number = super().to_python(value)
        if number is None:
            return None
        if not number.is_finite():
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return int(number * BILLION)

    def validate(self, value):
        if value is None:
            return super().validate(value)
        if value <= 0:
            raise ValidationError(_("Must be more than zero."), code="min_value")
        if value > self.maximum:
            raise ValidationError(
                _("%(value)s billion is implausibly large (limit %(limit)s billion); check the unit."),
                code="max_value",
                params={"value": format(Decimal(value) / BILLION, "f"), "limit": self.maximum // BILLION},
            )

    def run_validators(self, value):
        """The bounds are checked on the whole number in validate(); the decimal places only limit the input."""


class ToolsField(forms.MultipleChoiceField):
    widget = forms.CheckboxSelectMultiple


class WorkloadSummaryForm(forms.ModelForm):
    config_json_text = forms.CharField(
        label=_("Paste config.json"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false", "translate": "no"}),
        help_text=_(
            "The model's config.json from its repository: layers, heads, KV heads, head dim, experts, "
            "tied embeddings and sliding window are read from it."
        ),
    )
    config_json_file = forms.FileField(label=_("or upload config.json"), required=False)
    applied_config = forms.CharField(required=False, widget=forms.HiddenInput)
    discard_shape_extras = forms.BooleanField(
        label=_("Forget the further shape values read from config.json"), required=False
    )
    params = BillionsField(label=_("Parameters (billions)"), required=False, maximum=SHAPE_LIMITS["params"])
    active_params = BillionsField(
        label=_("Active parameters per token (billions)"),
        required=False,
        maximum=SHAPE_LIMITS["active_params"],
        help_text=_("Mixture of experts only."),
    )
    tokens_to_train = BillionsField(label=_("Tokens to train (billions)"), required=False, maximum=10**15)
    tools = ToolsField(label=_("Tools"), choices=Tool.choices, required=False)

    class Meta:
        model = WorkloadSummary
        fields = FORM_FIELDS
        widgets = {
            # What people type is data: the page's translation leaves it alone.
            "notes": forms.Textarea(attrs={"rows": 2, "translate": "no"}),
            "decision_metric_reason": forms.Textarea(attrs={"rows": 2, "translate": "no"}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.config_applied = False
        self.fields["decision_metric"].choices = [
            ("", _("The one proposed for the workload type")),
            *[choice for choice in self.fields["decision_metric"].choices if choice[0]],
        ]
        for name in ("precision", "kv_cache_precision"):
            self.fields[name].widget.attrs["translate"] = "no"  # format names, the same in every language

    # -- config.json ----------------------------------------------------------------------------------------------

    def _config_text(self) -> tuple[str | bytes | None, str]:
        upload = self.cleaned_data.get("config_json_file")
        if upload:
            if upload.size > MAX_CONFIG_BYTES:
                raise ValidationError(_("This file is too large to be a config.json."))
            return upload.read(), "config_json_file"
        text = (self.cleaned_data.get("config_json_text") or "").strip()
        return (text or None), "config_json_text"

    def _apply_config(self) -> None:
        try:
            raw, field_name = self._config_text()
        except ValidationError as error:
            self.add_error("config_json_file", error)
            return
        if raw is None:
            return
        try:
            shape = parse_hf_config_json(raw)
        except ShapeError as error:
            self.add_error(
                field_name, _("config.json could not be read: %(reason)s") % {"reason": shape_error_message(error)}
            )
            return
        values = estimates.summary_values_from(shape)
        extras = values.pop("shape_extras")
        data = self.data.copy()
        for name, value in values.items():
            if name not in self.fields or (name in STATED_COUNTS and value is None):
                continue  # a config.json never states the parameter count: keep the one entered
            self.cleaned_data[name] = value
            self._errors.pop(name, None)
            data[name] = self.fields[name].prepare_value(value) if value is not None else ""
            if isinstance(value, bool):
                if value:
                    data[name] = "on"
                else:
                    data.pop(name, None)
        config = json.loads(raw)
        name_or_path = config.get("_name_or_path") if isinstance(config, dict) else None
        if isinstance(name_or_path, str) and name_or_path and not self.cleaned_data.get("model_name"):
            self.cleaned_data["model_name"] = name_or_path[:200]
            data["model_name"] = name_or_path[:200]
        data["config_json_text"] = ""
        data["applied_config"] = raw.decode() if isinstance(raw, bytes) else raw
        self.data = data
        self.instance.shape_extras = extras
        self.instance.config_json = config
        self.config_applied = True

    def _restore_applied_config(self) -> None:
        """Keep the further shape values of a config.json applied in an earlier htmx round (its column values are
        in the fields already, and may have been edited since)."""
        text = (self.cleaned_data.get("applied_config") or "").strip()
        if not text:
            return
        try:
            shape = parse_hf_config_json(text)
        except ShapeError:
            return  # the hidden field was tampered with: keep what the summary had
        self.instance.shape_extras = estimates.shape_extras_from(shape)
        self.instance.config_json = json.loads(text)

    def clean(self):
        cleaned = super().clean()
        if not self.cleaned_data.get("config_json_text") and not self.cleaned_data.get("config_json_file"):
            self._restore_applied_config()
        self._apply_config()
        if cleaned.get("discard_shape_extras"):
            self.instance.shape_extras = {}
        return cleaned

    # -- what the services receive --------------------------------------------------------------------------------

    def summary_data(self) -> dict:
        """The cleaned values, with the shape values and the config.json read from a pasted or uploaded file."""
        data = {name: self.cleaned_data.get(name) for name in FORM_FIELDS}
        data["tools"] = list(self.cleaned_data.get("tools") or [])
        data["shape_extras"] = self.instance.shape_extras or {}
        data["config_json"] = self.instance.config_json
        return {name: value for name, value in data.items() if name in EDITABLE_FIELDS}

    def drop_required_errors(self) -> None:
        """While the form is being filled in (htmx validation), an empty required field is not an error yet."""
        for name, error_list in list(self.errors.as_data().items()):
            kept = [error for error in error_list if error.code != "required"]
            if kept:
                self._errors[name] = self.error_class(kept)
            else:
                del self._errors[name]
