"""Reads of quotes: current prices, freshness, conversion to the reporting currency, the checklist and its policy,
and the comparison rows. Every list starts from a `for_user` queryset."""

from __future__ import annotations

import datetime
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.translation import gettext as _

from apps.common import money
from apps.quotes.freshness import Freshness, FreshnessStatus, price_freshness, worst
from apps.quotes.kinds import HOURLY_UNITS
from apps.quotes.models import (
    COMMITTED_MODELS,
    AnswerStatus,
    Candidate,
    CandidateKind,
    ChecklistAnswer,
    ChecklistGroup,
    ChecklistQuestion,
    CommitmentTier,
    CostKind,
    CostLine,
    ExchangeRate,
    PriceComponent,
    PriceUnit,
    PriceVersion,
    Quote,
    StalePriceFlag,
    Vendor,
)

# ---------------------------------------------------------------------------------------------------------------
# Querysets


def vendors_for(user) -> QuerySet[Vendor]:
    return Vendor.objects.for_user(user).select_related("team")


def quotes_for(user) -> QuerySet[Quote]:
    """The user's quotes with what every list shows, in a fixed number of queries."""
    return (
        Quote.objects.for_user(user)
        .select_related("vendor", "gpu", "team")
        .prefetch_related(
            Prefetch(
                "price_versions",
                queryset=PriceVersion.objects.select_related("entered_by", "document").order_by("component", "-number"),
            ),
            Prefetch("answers", queryset=ChecklistAnswer.objects.select_related("question")),
        )
    )


def quote_get(user, pk) -> Quote:
    return get_object_or_404(quotes_for(user), pk=pk)


def candidates_for(user) -> QuerySet[Candidate]:
    return (
        Candidate.objects.for_user(user)
        .select_related("quote__vendor", "quote__gpu", "quote__team", "team", "created_by", "workload_summary")
        .prefetch_related(
            Prefetch("quote__price_versions", queryset=PriceVersion.objects.order_by("component", "-number")),
            Prefetch("quote__answers", queryset=ChecklistAnswer.objects.select_related("question")),
            Prefetch(
                "quote__cost_lines",
                queryset=CostLine.objects.current().select_related("estimated_by"),
                to_attr="current_cost_lines",
            ),
        )
    )


# ---------------------------------------------------------------------------------------------------------------
# Prices and freshness


def current_prices(quote: Quote) -> dict[str, PriceVersion]:
    """The newest version of each priced item (from the prefetched versions when the queryset has them)."""
    latest: dict[str, PriceVersion] = {}
    for version in quote.price_versions.all():
        known = latest.get(version.component)
        if known is None or version.number > known.number:
            latest[version.component] = version
    return latest


def price_history(quote: Quote) -> list[tuple[str, list[PriceVersion]]]:
    """(component label, versions newest first) for every priced item, in the order of PriceComponent."""
    grouped: dict[str, list[PriceVersion]] = defaultdict(list)
    for version in quote.price_versions.all():
        grouped[version.component].append(version)
    return [
        (label, sorted(grouped[value], key=lambda version: -version.number))
        for value, label in PriceComponent.choices
        if grouped.get(value)
    ]


def _now(now: datetime.datetime | None) -> datetime.datetime:
    return now if now is not None else timezone.now()


def freshness_of(price: PriceVersion, *, stale_after_days: int, now: datetime.datetime | None = None) -> Freshness:
    moment = _now(now)
    return price_freshness(
        observed_at=price.observed_at,
        valid_until=price.valid_until,
        now=moment,
        today=timezone.localdate(moment),
        stale_after_days=stale_after_days,
    )


def required_components(quote: Quote) -> list[str]:
    """The priced items a quote needs before it can be compared (one of list/contracted counts for the rate)."""
    if quote.price_unit == PriceUnit.MILLION_TOKENS:
        return [PriceComponent.INPUT_TOKENS, PriceComponent.OUTPUT_TOKENS]
    if quote.is_purchase:
        return [PriceComponent.LIST_PRICE, PriceComponent.ENERGY_PER_KWH]
    return [PriceComponent.LIST_PRICE]


def missing_prices(quote: Quote, prices: dict[str, PriceVersion] | None = None) -> list[str]:
    prices = current_prices(quote) if prices is None else prices
    missing = []
    for component in required_components(quote):
        if component == PriceComponent.LIST_PRICE and PriceComponent.CONTRACTED_PRICE in prices:
            continue
        if component not in prices:
            missing.append(str(PriceComponent(component).label))
    return missing


def quote_freshness(quote: Quote, *, now: datetime.datetime | None = None) -> Freshness:
    """The worst freshness among the quote's current prices; MISSING when a required price is absent."""
    prices = current_prices(quote)
    if missing_prices(quote, prices):
        return Freshness(status=FreshnessStatus.MISSING)
    days = quote.team.stale_price_age_days
    return worst([freshness_of(price, stale_after_days=days, now=now) for price in prices.values()])


def stale_current_prices(*, now: datetime.datetime | None = None, team=None) -> list[tuple[PriceVersion, Freshness]]:
    """Every current price (the newest version of its item) that is stale or expired now."""
    moment = _now(now)
    versions = PriceVersion.objects.select_related("quote__team", "quote__vendor").order_by(
        "quote_id", "component", "-number"
    )
    if team is not None:
        versions = versions.filter(quote__team=team)
    result = []
    seen: set[tuple[int, str]] = set()
    for version in versions.iterator(chunk_size=500):
        key = (version.quote_id, version.component)
        if key in seen:
            continue
        seen.add(key)
        freshness = freshness_of(version, stale_after_days=version.quote.team.stale_price_age_days, now=moment)
        if not freshness.is_fresh:
            result.append((version, freshness))
    return result


def open_stale_flags(user) -> QuerySet[StalePriceFlag]:
    return (
        StalePriceFlag.objects.for_user(user)
        .filter(cleared_at__isnull=True)
        .select_related("price__quote__vendor", "price__quote__team", "price__entered_by")
    )


# ---------------------------------------------------------------------------------------------------------------
# Money in the reporting currency


@dataclass(frozen=True)
class Converted:
    """An amount in the target currency, with the rate that produced it; `amount` is None when no rate exists."""

    amount: Decimal | None
    currency: str
    source_amount: Decimal
    source_currency: str
    rate: ExchangeRate | None = None

    @property
    def is_converted(self) -> bool:
        return self.amount is not None

    @property
    def missing_rate(self) -> bool:
        return self.amount is None


class RateBook:
    """The team's exchange rates loaded once: the newest rate on or before a date for each direction."""

    def __init__(self, team, *, on: datetime.date | None = None):
        self.team = team
        self.on = on or timezone.localdate()
        self._rates: dict[tuple[str, str], ExchangeRate] = {}
        for rate in ExchangeRate.objects.for_team(team).filter(as_of__lte=self.on).order_by("as_of", "pk"):
            self._rates[(rate.from_currency, rate.to_currency)] = rate  # later rows win: newest as_of

    def rate(self, from_currency: str, to_currency: str) -> ExchangeRate | None:
        return self._rates.get((from_currency, to_currency))

    def convert(self, amount: Decimal, from_currency: str, to_currency: str | None = None) -> Converted:
        target = to_currency or self.team.reporting_currency
        if from_currency == target:
            return Converted(amount, target, amount, from_currency)
        rate = self.rate(from_currency, target)
        if rate is None:
            return Converted(None, target, amount, from_currency)
        return Converted(money.convert(amount, rate.rate), target, amount, from_currency, rate)


def exchange_rates_for(user) -> QuerySet[ExchangeRate]:
    return ExchangeRate.objects.for_user(user).select_related("entered_by", "team")


# ---------------------------------------------------------------------------------------------------------------
# Hourly prices and the commitment


def per_gpu_hour(quote: Quote, amount: Decimal | None) -> Decimal | None:
    """A GPU-hour or node-hour price as a price per GPU-hour (a node's hour shared by its GPUs)."""
    if amount is None:
        return None
    if quote.price_unit == PriceUnit.GPU_HOUR:
        return amount
    if quote.price_unit == PriceUnit.NODE_HOUR:
        return money.divide(amount, quote.gpus_per_node)
    return None


def effective_rate(prices: dict[str, PriceVersion]) -> PriceVersion | None:
    """The rate the team would pay: the contracted price when there is one, else the list price."""
    return prices.get(PriceComponent.CONTRACTED_PRICE) or prices.get(PriceComponent.LIST_PRICE)


def commitment_of(quote: Quote, prices: dict[str, PriceVersion] | None = None) -> Decimal:
    """The money the quote commits to, in the currency of its prices (0 for pay-as-you-go).

    Purchase: capital cost (+ spares) × nodes. Otherwise the larger of the minimum commitment over the term and
    the committed hours over the term at the effective rate (for reserved-like models).
    """
    prices = current_prices(quote) if prices is None else prices
    rate = effective_rate(prices)
    if quote.is_purchase:
        if rate is None:
            return Decimal(0)
        spares = prices.get(PriceComponent.SPARES_PER_NODE)
        per_node = money.add(rate.amount, spares.amount if spares else 0)
        return money.multiply(per_node, quote.node_count)
    months = quote.term_months or 1
    minimum = prices.get(PriceComponent.MINIMUM_COMMITMENT)
    committed_minimum = money.multiply(minimum.amount, months) if minimum else Decimal(0)
    committed_hours = Decimal(0)
    if quote.commercial_model in COMMITTED_MODELS and quote.committed_hours_per_month and rate is not None:
        units = quote.gpus_quoted if quote.price_unit == PriceUnit.GPU_HOUR else quote.node_count
        if quote.price_unit in HOURLY_UNITS:
            committed_hours = money.multiply(quote.committed_hours_per_month, rate.amount, units, months)
    return max(committed_minimum, committed_hours)


def prices_currency(quote: Quote, prices: dict[str, PriceVersion]) -> str:
    rate = effective_rate(prices) or next(iter(prices.values()), None)
    return rate.currency if rate is not None else quote.currency


# ---------------------------------------------------------------------------------------------------------------
# The checklist and the commitment policy


def active_questions() -> list[ChecklistQuestion]:
    return list(ChecklistQuestion.objects.filter(active=True).order_by("group", "position", "code"))


@dataclass
class ChecklistSection:
    group: str
    label: str
    items: list[tuple[ChecklistQuestion, ChecklistAnswer | None]]

    @property
    def answered(self) -> int:
        return sum(1 for _question, answer in self.items if answer is not None)

    @property
    def total(self) -> int:
        return len(self.items)

    @property
    def complete(self) -> bool:
        return self.answered == self.total


def checklist_sections(quote: Quote, questions: list[ChecklistQuestion] | None = None) -> list[ChecklistSection]:
    questions = active_questions() if questions is None else questions
    answers = {answer.question_id: answer for answer in quote.answers.all()}
    sections = []
    for group, label in ChecklistGroup.choices:
        items = [(question, answers.get(question.pk)) for question in questions if question.group == group]
        sections.append(ChecklistSection(group=group, label=str(label), items=items))
    return sections


@dataclass(frozen=True)
class ChecklistProgress:
    answered: int
    total: int

    @property
    def percent(self) -> int:
        return round(100 * self.answered / self.total) if self.total else 100


def checklist_progress(quote: Quote, questions: list[ChecklistQuestion] | None = None) -> ChecklistProgress:
    sections = checklist_sections(quote, questions)
    return ChecklistProgress(sum(section.answered for section in sections), sum(s.total for s in sections))


@dataclass(frozen=True)
class MissingAnswer:
    question: ChecklistQuestion
    reason: str


@dataclass
class PolicyCheck:
    """Where a quote stands against the commitment policy: the tiers it reaches and what is still missing."""

    commitment: Decimal
    currency: str
    tiers: list[CommitmentTier] = field(default_factory=list)
    missing: list[MissingAnswer] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.missing and not self.problems

    @property
    def tier(self) -> CommitmentTier | None:
        return self.tiers[-1] if self.tiers else None


def policy_tiers() -> list[CommitmentTier]:
    return list(CommitmentTier.objects.prefetch_related("required_questions"))


def policy_check(
    quote: Quote,
    *,
    tiers: list[CommitmentTier] | None = None,
    rates: RateBook | None = None,
) -> PolicyCheck:
    """The tiers the quote's commitment reaches and the answers those tiers require that are not there."""
    tiers = policy_tiers() if tiers is None else tiers
    prices = current_prices(quote)
    commitment = commitment_of(quote, prices)
    currency = prices_currency(quote, prices)
    check = PolicyCheck(commitment=commitment, currency=currency)
    reached = []
    for tier in tiers:
        if tier.minimum_commitment <= 0:
            reached.append(tier)
            continue
        if commitment <= 0:
            continue
        rates = rates or RateBook(quote.team)
        converted = rates.convert(commitment, currency, tier.currency)
        if converted.missing_rate:
            check.problems.append(
                _(
                    "No exchange rate from %(from)s to %(to)s: the commitment cannot be placed in the policy tier "
                    "“%(tier)s”."
                )
                % {"from": currency, "to": tier.currency, "tier": tier.name}
            )
            continue
        if converted.amount >= tier.minimum_commitment:
            reached.append(tier)
    reached.sort(key=lambda tier: (tier.minimum_commitment, tier.pk))
    check.tiers = reached
    evidence_required = any(tier.evidence_required for tier in reached)
    answers = {answer.question_id: answer for answer in quote.answers.all()}
    required: dict[int, ChecklistQuestion] = {}
    for tier in reached:
        for question in tier.required_questions.all():
            if question.active:
                required[question.pk] = question
    for question in sorted(required.values(), key=lambda q: (q.group, q.position, q.code)):
        answer = answers.get(question.pk)
        if answer is None:
            check.missing.append(MissingAnswer(question, _("not answered")))
        elif answer.status == AnswerStatus.NOT_PROVIDED:
            check.missing.append(MissingAnswer(question, _("the vendor has not provided it")))
        elif answer.status == AnswerStatus.ANSWERED and evidence_required and not answer.has_evidence:
            check.missing.append(MissingAnswer(question, _("evidence missing")))
    return check


# ---------------------------------------------------------------------------------------------------------------
# Cost lines and candidates


def candidate_cost_lines(candidate: Candidate) -> list[CostLine]:
    """The lines that apply to a candidate: the quote's shared lines plus the candidate's own (current ones)."""
    lines = getattr(candidate.quote, "current_cost_lines", None)
    if lines is None:
        lines = list(CostLine.objects.current().filter(quote=candidate.quote_id).select_related("estimated_by"))
    return [line for line in lines if line.candidate_id in (None, candidate.pk)]


def platform_labor_missing(candidate: Candidate, lines: list[CostLine] | None = None) -> bool:
    """True for a GPU or purchase candidate whose platform labor adds up to zero (the guide's mistake 5)."""
    if candidate.kind == CandidateKind.API:
        return False
    lines = candidate_cost_lines(candidate) if lines is None else lines
    labor = [line.amount for line in lines if line.kind == CostKind.PLATFORM_LABOR]
    return not labor or money.add(*labor) == 0


# ---------------------------------------------------------------------------------------------------------------
# The comparison table


@dataclass
class ComparisonRow:
    quote: Quote
    prices: dict[str, PriceVersion]
    freshness: Freshness
    progress: ChecklistProgress
    policy: PolicyCheck
    list_per_gpu_hour: Converted | None
    contracted_per_gpu_hour: Converted | None
    input_per_million: Converted | None
    output_per_million: Converted | None
    capital_per_node: Converted | None

    @property
    def missing_rates(self) -> list[str]:
        found = []
        for converted in (
            self.list_per_gpu_hour,
            self.contracted_per_gpu_hour,
            self.input_per_million,
            self.output_per_million,
            self.capital_per_node,
        ):
            if converted is not None and converted.missing_rate and converted.source_currency not in found:
                found.append(converted.source_currency)
        return found


def comparison_rows(
    quotes: QuerySet[Quote] | list[Quote], team, *, now: datetime.datetime | None = None
) -> list[ComparisonRow]:
    """One row per quote with its prices in the team's reporting currency, checklist completeness and freshness."""
    moment = _now(now)
    rates = RateBook(team, on=timezone.localdate(moment))
    questions = active_questions()
    tiers = policy_tiers()
    rows = []
    for quote in quotes:
        prices = current_prices(quote)

        def converted(component: str, per_hour: bool = False, _prices=prices, _quote=quote) -> Converted | None:
            price = _prices.get(component)
            if price is None:
                return None
            amount = per_gpu_hour(_quote, price.amount) if per_hour else price.amount
            if amount is None:
                return None
            return rates.convert(amount, price.currency)

        rows.append(
            ComparisonRow(
                quote=quote,
                prices=prices,
                freshness=quote_freshness(quote, now=moment),
                progress=checklist_progress(quote, questions),
                policy=policy_check(quote, tiers=tiers, rates=rates),
                list_per_gpu_hour=converted(PriceComponent.LIST_PRICE, per_hour=True),
                contracted_per_gpu_hour=converted(PriceComponent.CONTRACTED_PRICE, per_hour=True),
                input_per_million=converted(PriceComponent.INPUT_TOKENS),
                output_per_million=converted(PriceComponent.OUTPUT_TOKENS),
                capital_per_node=(
                    converted(PriceComponent.CONTRACTED_PRICE) or converted(PriceComponent.LIST_PRICE)
                    if quote.is_purchase
                    else None
                ),
            )
        )
    return rows


@dataclass
class CandidateRow:
    candidate: Candidate
    prices: dict[str, PriceVersion]
    freshness: Freshness
    policy: PolicyCheck
    cost_lines: list[CostLine]
    labor_missing: bool
    rate_per_gpu_hour: Converted | None
    input_per_million: Converted | None
    output_per_million: Converted | None


def candidate_rows(candidates, *, now: datetime.datetime | None = None) -> list[CandidateRow]:
    """Each candidate with its quote's current prices (reporting currency), freshness, policy and cost lines."""
    moment = _now(now)
    tiers = policy_tiers()
    books: dict[int, RateBook] = {}
    rows = []
    for candidate in candidates:
        quote = candidate.quote
        book = books.get(candidate.team_id)
        if book is None:
            book = books[candidate.team_id] = RateBook(candidate.team, on=timezone.localdate(moment))
        prices = current_prices(quote)
        lines = candidate_cost_lines(candidate)
        rate = effective_rate(prices)
        hourly = per_gpu_hour(quote, rate.amount) if rate is not None else None

        def converted(component: str, _prices=prices, _book=book) -> Converted | None:
            price = _prices.get(component)
            return _book.convert(price.amount, price.currency) if price is not None else None

        rows.append(
            CandidateRow(
                candidate=candidate,
                prices=prices,
                freshness=quote_freshness(quote, now=moment),
                policy=policy_check(quote, tiers=tiers, rates=book),
                cost_lines=lines,
                labor_missing=platform_labor_missing(candidate, lines),
                rate_per_gpu_hour=book.convert(hourly, rate.currency) if hourly is not None else None,
                input_per_million=converted(PriceComponent.INPUT_TOKENS),
                output_per_million=converted(PriceComponent.OUTPUT_TOKENS),
            )
        )
    return rows


def candidates_by_hourly_price(user, workload_summary) -> list[CandidateRow]:
    """The workload version's GPU-rental candidates, cheapest hour first (in the reporting currency).

    For the workload page's "lowest hourly price" line: the caller keeps the ones whose GPU fits and labels the
    figure as the hourly price, not the cost per accepted output (phase 4 computes that). Candidates whose price
    cannot be converted (no exchange rate) are left out rather than compared in the wrong currency.
    """
    candidates = candidates_for(user).filter(workload_summary=workload_summary, kind=CandidateKind.GPU)
    rows = [row for row in candidate_rows(candidates) if row.rate_per_gpu_hour and row.rate_per_gpu_hour.amount]
    return sorted(rows, key=lambda row: (row.rate_per_gpu_hour.amount, row.candidate.pk))


# ---------------------------------------------------------------------------------------------------------------
# The workload shortlist's prices (registered with apps/workloads/price_sources in QuotesConfig.ready)


def cheapest_gpu_hour_prices(team, gpu_keys) -> dict:
    """The team's cheapest current price per GPU-hour for each catalog GPU, in its reporting currency.

    Per quote: the effective rate (contracted, else list; the newest version of each), per GPU-hour (a node-hour
    shared by the node's GPUs), converted at the team's newest exchange rate. Left out: quotes priced per token, per
    request or bought, prices past their `valid_until`, and prices with no exchange rate to the reporting currency
    (never compared in the wrong currency).
    """
    from apps.workloads.price_sources import QUOTE, PriceRef

    today = timezone.localdate()
    book = RateBook(team, on=today)
    best: dict = {}
    quotes = (
        Quote.objects.for_team(team)
        .filter(gpu_id__in=list(gpu_keys), price_unit__in=HOURLY_UNITS)
        .select_related("vendor")
        .prefetch_related(Prefetch("price_versions", queryset=PriceVersion.objects.order_by("component", "-number")))
    )
    for quote in quotes:
        rate = effective_rate(current_prices(quote))
        if rate is None or (rate.valid_until is not None and rate.valid_until < today):
            continue
        hourly = per_gpu_hour(quote, rate.amount)
        if not hourly or hourly <= 0:
            continue
        converted = book.convert(hourly, rate.currency)
        if converted.amount is None or converted.amount <= 0:
            continue
        known = best.get(quote.gpu_id)
        if known is not None and known.amount <= converted.amount:
            continue
        conversion = (
            f", {money.canonical(hourly)} {rate.currency} converted at {converted.rate.rate} "
            f"({converted.rate.source}, {converted.rate.as_of})"
            if converted.rate is not None
            else ""
        )
        best[quote.gpu_id] = PriceRef(
            amount=converted.amount,
            currency=converted.currency,
            source=(
                f"quote #{quote.pk} “{quote.title}” ({quote.vendor.name}, {quote.get_commercial_model_display()}, "
                f"{rate.get_component_display()} v{rate.number} observed {rate.observed_at.date().isoformat()}"
                f"{conversion})"
            ),
            kind=QUOTE,
            as_of=rate.observed_at.date(),
        )
    return best
