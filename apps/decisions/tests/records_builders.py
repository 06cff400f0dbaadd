"""Decision records built the way people build them, through the services: the four people of a sign-off (author,
platform reviewer, finance, product) and records on the issue-9 worked example in each state."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from apps.comparison.tests.builders import worked_example
from apps.decisions import services
from apps.decisions.models import StageKind
from tests.factories import UserFactory

_numbers = itertools.count(1)


@dataclass
class People:
    author: object
    reviewer: object
    finance: object
    product: object


def people(team, prefix: str = "") -> People:
    """Four members of `team`, one per part of the sign-off (named with a prefix so several sets can coexist)."""
    prefix = prefix or f"p{next(_numbers)}-"
    return People(
        author=UserFactory(username=f"{prefix}author", roles=["platform"], teams=[team]),
        reviewer=UserFactory(username=f"{prefix}reviewer", roles=["platform"], teams=[team]),
        finance=UserFactory(username=f"{prefix}finance", roles=["finance"], teams=[team]),
        product=UserFactory(username=f"{prefix}product", roles=["product"], teams=[team]),
    )


@dataclass
class Setup:
    team: object
    people: People
    example: object
    record: object


def draft(team, who: People | None = None, *, choose: str = "b", **content) -> Setup:
    """A draft on the worked example choosing candidate `choose` (a, b or c), reserved capacity by default."""
    who = who or people(team)
    example = worked_example(team, who.author)
    values = {
        "chosen_option": getattr(example, choose),
        "capacity_model": "reserve" if choose == "b" else ("api" if choose == "c" else "rent"),
        "rationale": "Cheapest per accepted response at the peak rate, with measured capacity.",
        "context": "Support chat moves off the shared cluster.",
        "drivers": "cost per accepted response\np95 latency under 2 s",
        "consequences": "A 12-month reservation.",
        "confirmation_metric": "Cost per accepted response below 0.0004 USD after 3 months.",
        "deciders": [who.author],
        "informed": [who.finance],
        **content,
    }
    record = services.record_create(
        actor=who.author, team=team, workload_summary=example.summary, title="GPU for support chat", **values
    )
    return Setup(team, who, example, record)


def proposed(team, who: People | None = None, **content) -> Setup:
    setup = draft(team, who, **content)
    setup.record = services.record_propose(actor=setup.people.author, record=setup.record)
    return setup


def sign(setup: Setup, *kinds: str, approve: bool = True, comment: str = "") -> None:
    reviewers = {
        StageKind.PLATFORM: setup.people.reviewer,
        StageKind.FINANCE: setup.people.finance,
        StageKind.PRODUCT: setup.people.product,
    }
    for kind in kinds:
        decision = services.stage_decide(
            actor=reviewers[kind], record=setup.record, kind=kind, approve=approve, comment=comment
        )
        setup.record = decision.record


def accepted(team, who: People | None = None, **content) -> Setup:
    setup = proposed(team, who, **content)
    sign(setup, StageKind.PLATFORM, StageKind.FINANCE, StageKind.PRODUCT)
    return setup
