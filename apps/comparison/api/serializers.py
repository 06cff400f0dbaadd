"""The comparison API's query parameters, the waivers of the mistakes check, and the shape of the comparison's answer
for the OpenAPI schema (the answer itself is built by exports.comparison_data()). Figures follow
apps/common/money.py's rule: each figure is an exact decimal string (plain notation, never an exponent, zero as "0",
at most 30 significant digits); each `display` object gives the same figures as shown (money to the currency's minor
unit, unit costs and quantities to six significant digits). Database ids are ints."""

from __future__ import annotations

from rest_framework import serializers

from apps.common.api_fields import ScopedPrimaryKeyRelatedField
from apps.comparison.models import MistakeWaiver
from apps.quotes.models import Candidate

EXACT = "An exact decimal string (money.exact): plain notation, never an exponent, zero as \"0\"."
DISPLAY = ("The figures as shown, by name (money.shown): money to the currency's minor unit, unit costs (`*_price`, "
           "`*unit_cost`) and quantities (hours, outputs, shares, rates) to six significant digits.")


class ComparisonQuerySerializer(serializers.Serializer):
    chosen = serializers.IntegerField(required=False, help_text="A candidate id: check the six mistakes for it.")
    focus = serializers.IntegerField(required=False, help_text="A candidate id: the sensitivity chart's candidate.")


class MistakeWaiverSerializer(serializers.ModelSerializer):
    """A named person's waiver of one rule for one candidate: the person is the one who sends it; `reason` says why."""

    candidate = ScopedPrimaryKeyRelatedField(model=Candidate)
    waived_by = serializers.StringRelatedField()
    reason = serializers.CharField(trim_whitespace=True, allow_blank=False, max_length=5000)

    class Meta:
        model = MistakeWaiver
        fields = ["id", "candidate", "rule", "reason", "waived_by", "created_at"]
        read_only_fields = ["waived_by", "created_at"]
        validators = []  # one waiver per candidate and rule: the service answers a second one


def _exact(help_text: str = EXACT, **kwargs) -> serializers.CharField:
    return serializers.CharField(help_text=help_text, **kwargs)


def _display() -> serializers.DictField:
    return serializers.DictField(child=serializers.JSONField(), help_text=DISPLAY)


class ProblemSerializer(serializers.Serializer):
    candidate_id = serializers.IntegerField(allow_null=True, help_text="The candidate's id; null: the workload.")
    candidate = serializers.CharField()
    field = serializers.CharField()
    field_label = serializers.CharField()
    message = serializers.CharField()
    code = serializers.CharField(help_text='"unit_mismatch": two units with no conversion (the API answers 400).')


class NoteSerializer(serializers.Serializer):
    code = serializers.CharField()
    params = serializers.DictField(help_text="The note's figures, exact (decimal strings) or ints.")
    text = serializers.CharField(help_text="In English, its figures shown by the rule.")


class RowSerializer(serializers.Serializer):
    """A normalised row: every Decimal field of the cost model's Row as an exact string; the row may gain fields."""

    candidate_id = serializers.IntegerField()
    label = serializers.CharField()
    kind = serializers.CharField()
    commercial_model = serializers.CharField()
    currency = serializers.CharField()
    gpus = serializers.IntegerField()
    nodes = serializers.IntegerField()
    unit = serializers.CharField(help_text="What the demand counts (apps/common/work_units.py), per one unit.")
    capacity_unit = serializers.CharField(help_text="What the capacity counts (an API route: requests).")
    billed_compute = _exact(help_text="The provider's bill for compute: gpu_cost + retry_waste + failure_loss.")
    gpu_cost = _exact()
    idle_capacity = _exact()
    retry_waste = _exact()
    total_cost = _exact()
    effective_unit_cost = _exact()
    time_to_answer_hours = _exact(allow_null=True, help_text="Hours the sized fleet takes for one unit.")
    hourly_price = _exact(allow_null=True)
    display = _display()
    notes = NoteSerializer(many=True)
    provenance = serializers.DictField(child=serializers.ListField(child=serializers.DictField()))


class TrainingRowSerializer(serializers.Serializer):
    run_id = serializers.IntegerField(help_text="The candidate's id.")
    currency = serializers.CharField()
    checkpoints = serializers.IntegerField()
    cost_per_completed_run = _exact()
    acceptance = _exact(help_text="Share of completed runs that count (reach the target eval score, accepted).")
    unit = serializers.CharField(help_text='"training_run" or "checkpoint".')
    cost_per_accepted_output = _exact(help_text="cost_per_completed_run ÷ acceptance: the decision metric.")
    display = _display()
    provenance = serializers.DictField(child=serializers.ListField(child=serializers.DictField()))


class CandidateResultSerializer(serializers.Serializer):
    candidate_id = serializers.IntegerField()
    label = serializers.CharField()
    kind = serializers.CharField()
    quote_id = serializers.IntegerField()
    vendor = serializers.CharField()
    inputs = serializers.ListField(child=serializers.DictField(), help_text="Phase-4 inputs; `value` exact.")
    predicted_memory_margin = _exact(allow_null=True)
    warnings = serializers.ListField(child=serializers.CharField())
    row = RowSerializer(allow_null=True)
    training_row = TrainingRowSerializer(allow_null=True)
    training_hourly_price = _exact(allow_null=True)
    error = ProblemSerializer(allow_null=True)
    display = _display()


class FindingSerializer(serializers.Serializer):
    reason = serializers.CharField()
    candidate_id = serializers.IntegerField(allow_null=True)
    severity = serializers.CharField()
    message = serializers.CharField()


class MistakeSerializer(serializers.Serializer):
    code = serializers.CharField()
    number = serializers.IntegerField()
    title = serializers.CharField()
    explanation = serializers.CharField()
    raised = serializers.BooleanField()
    findings = FindingSerializer(many=True)


class SensitivityBarSerializer(serializers.Serializer):
    factor = serializers.CharField()
    low = _exact()
    high = _exact()
    base = _exact()
    display = _display()


class SensitivitySerializer(serializers.Serializer):
    candidate_id = serializers.IntegerField(allow_null=True)
    bars = SensitivityBarSerializer(many=True)


class BreakEvenSerializer(serializers.Serializer):
    reserve_vs_on_demand_utilisation = _exact(allow_null=True)
    buy_vs_rent_months = _exact(allow_null=True)
    buy_never_pays = serializers.BooleanField()
    api_vs_self_host_tokens_per_month = _exact(allow_null=True)
    display = _display()


class HybridPartSerializer(serializers.Serializer):
    part = serializers.CharField(help_text='"reserved" (a reserved or bought base), "on_demand" (burst) or "api".')
    candidate_id = serializers.IntegerField(help_text="The candidate whose row the part is made of.")
    label = serializers.CharField()
    used = serializers.BooleanField(help_text="False: the cheapest mix does without this part.")
    units = serializers.IntegerField(help_text="Base units, or the most burst units running at once.")
    gpus = serializers.IntegerField()
    capacity_measured = serializers.BooleanField(help_text="False: the part's capacity is not measured.")
    outputs = _exact(help_text="Accepted outputs per period the part serves.")
    billed = _exact(help_text="The part's bill per period (minimum-commitment top-up included).")
    waste = _exact()


class HybridBreakEvenSerializer(serializers.Serializer):
    reserve_utilisation = _exact(allow_null=True, help_text="u*: reserving beats on demand above this share of the "
                                                            "operating hours.")
    reserve_hours = _exact(allow_null=True, help_text="u* × operating hours per period.")
    burst_outputs_per_hour = _exact(allow_null=True, help_text="A burst unit-hour beats the API above this many "
                                                               "accepted outputs.")
    base_outputs_vs_api = _exact(allow_null=True, help_text="A base unit beats the API above this many accepted "
                                                            "outputs per period.")
    display = _display()


class HybridSerializer(serializers.Serializer):
    """The hybrid plan: the cheapest mix of a reserved or bought base, on-demand burst and an API route, made of the
    candidates' rows (apps/comparison/hybrid.py). Not a database candidate: its `id` is the string "hybrid"."""

    id = serializers.CharField(help_text='Always "hybrid".')
    label = serializers.CharField()
    currency = serializers.CharField()
    billed_compute = _exact()
    gpu_cost = _exact()
    idle_capacity = _exact()
    failure_waste = _exact()
    total_cost = _exact()
    accepted_outputs = _exact()
    effective_unit_cost = _exact()
    api_outputs = _exact(help_text="Accepted outputs per period sent to the API route.")
    base_gpus = serializers.IntegerField()
    burst_gpus = serializers.IntegerField()
    display = _display()
    parts = HybridPartSerializer(many=True)
    unmeasured_parts = serializers.ListField(child=serializers.CharField(),
                                             help_text="Labels of the used parts whose capacity is not measured.")
    profile = serializers.DictField(help_text="The assumed demand profile: shape, windows, window hours, peak, mean.")
    blocks = serializers.ListField(child=serializers.DictField(),
                                   help_text="Per block of the profile: hours, load, and the base, burst and API "
                                             "outputs per hour.")
    break_even = HybridBreakEvenSerializer()
    notes = serializers.ListField(child=serializers.DictField())
    provenance = serializers.DictField(child=serializers.ListField(child=serializers.DictField()))


class ComparisonSerializer(serializers.Serializer):
    """The comparison of a workload version (documentation of exports.comparison_data())."""

    workload_summary = serializers.DictField()
    currency = serializers.CharField()
    demand = serializers.DictField(allow_null=True, help_text="The demand's figures, exact.")
    training = serializers.DictField(allow_null=True, help_text="The training plan's figures, exact.")
    exchange_rates = serializers.ListField(child=serializers.DictField())
    candidates = CandidateResultSerializer(many=True)
    errors = ProblemSerializer(many=True)
    cheapest_per_accepted_output = serializers.IntegerField(allow_null=True)
    lowest_hourly_price = serializers.IntegerField(allow_null=True)
    chosen = serializers.IntegerField(allow_null=True)
    mistakes = MistakeSerializer(many=True)
    sensitivity = SensitivitySerializer()
    break_even = BreakEvenSerializer()
    hybrid = HybridSerializer(allow_null=True, help_text="null: fewer than two kinds of part, or no peak to serve.")
    hybrid_problem = serializers.CharField(help_text="Why no hybrid plan could be made from these inputs, if so.")
