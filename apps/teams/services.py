"""Writes of team administration: teams, people, memberships, roles, and a team's first agent pool with its token.

Each service checks who may act (apps/teams/rules.py) and writes through apps/audit/services, one audit entry per
change, in the team concerned. A refusal is Django's ValidationError naming the field, or PermissionDenied.
Nothing here ever sets `is_staff` or `is_superuser`: those stay with superusers in the admin site.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from apps.accounts.models import Membership, Team
from apps.accounts.roles import Role
from apps.accounts.selectors import team_members_for_user
from apps.audit.models import ObjectChange
from apps.audit.services import model_create, model_snapshot, record_change
from apps.fleet.models import AgentPool, RegistrationToken
from apps.fleet.services import pool_create, registration_token_create
from apps.teams import rules

#: What an audit entry shows of a person (never the password hash).
USER_AUDIT_FIELDS = ["id", "username", "email", "first_name", "last_name", "is_active", "is_staff", "is_superuser"]
#: Bytes of randomness in a one-time password (16 URL-safe characters).
ONE_TIME_PASSWORD_BYTES = 12


def _require_administrator(actor, team: Team) -> None:
    if not rules.may_administer(actor, team):
        raise PermissionDenied(_("You do not administer this team."))


def clean_roles(roles: Iterable[str]) -> set[str]:
    """The role names, checked against the four roles (`superuser` or `staff` are not roles)."""
    chosen = {str(role) for role in roles}
    unknown = sorted(chosen - set(Role.values))
    if unknown:
        raise ValidationError(
            {"roles": _("Unknown roles: %(roles)s. A role is one of platform, finance, product or admin.")
             % {"roles": ", ".join(unknown)}}
        )
    return chosen


def roles_of(person) -> set[str]:
    return set(person.groups.filter(name__in=Role.values).values_list("name", flat=True))


def new_one_time_password() -> str:
    return secrets.token_urlsafe(ONE_TIME_PASSWORD_BYTES)


@transaction.atomic
def team_create(*, actor, name: str, slug: str, reporting_currency: str = "USD") -> Team:
    """A new team. A superuser may always; an admin only while no team exists, and then becomes its first member."""
    if not rules.may_create_team(actor):
        raise PermissionDenied(_("Only a superuser creates teams once the first team exists."))
    team = Team(name=name, slug=slug, reporting_currency=reporting_currency)
    model_create(instance=team, actor=actor, team=team, message="team created")
    if not rules.is_superuser(actor):
        # The first-run admin runs the team they created (a superuser sees every team without a membership).
        model_create(instance=Membership(team=team, user=actor), actor=actor, team=team, message="creator joins")
    return team


def _set_roles(*, actor, person, roles: set[str], team: Team, membership: Membership) -> bool:
    """Give `person` exactly `roles` (the rules in apps/teams/rules.py); one audit entry when they changed."""
    before = roles_of(person)
    if before == roles:
        return False
    acting_superuser = rules.is_superuser(actor)
    if person.is_superuser and not acting_superuser:
        raise ValidationError({"roles": _("A superuser's roles are changed by a superuser.")})
    if person.pk == actor.pk and not acting_superuser and roles - before:
        raise ValidationError({"roles": _("You cannot give yourself a role you do not hold; ask a superuser.")})
    if rules.teams_outside_administration(actor, person).exists():
        raise ValidationError({"roles": _(
            "%(person)s also works in a team you do not administer, and roles hold in every team: ask a superuser "
            "to change them."
        ) % {"person": person.get_username()}})
    person.groups.remove(*Group.objects.filter(name__in=before - roles))
    person.groups.add(*Group.objects.filter(name__in=roles - before))
    person.__dict__.pop("_dossier_roles", None)
    record_change(
        actor=actor, instance=membership, action=ObjectChange.Action.UPDATE, team=team, message="roles changed",
        before={"roles": sorted(before)}, after={"roles": sorted(roles)},
    )
    return True


@dataclass(frozen=True)
class CreatedPerson:
    membership: Membership
    one_time_password: str  # shown once to the admin who created the person; only its hash is stored


@transaction.atomic
def person_create(
    *,
    actor,
    team: Team,
    username: str,
    email: str = "",
    first_name: str = "",
    last_name: str = "",
    roles: Iterable[str] = (),
) -> CreatedPerson:
    """A new person in `team` with `roles` and a generated one-time password, returned once (never stored)."""
    _require_administrator(actor, team)
    chosen = clean_roles(roles)
    password = new_one_time_password()
    person = get_user_model()(
        username=username, email=email, first_name=first_name, last_name=last_name, is_staff=False,
        is_superuser=False, is_active=True,
    )
    person.set_password(password)
    model_create(instance=person, actor=actor, team=team, audit_fields=USER_AUDIT_FIELDS, message="person created")
    membership = model_create(instance=Membership(team=team, user=person), actor=actor, team=team)
    _set_roles(actor=actor, person=person, roles=chosen, team=team, membership=membership)
    return CreatedPerson(membership=membership, one_time_password=password)


@transaction.atomic
def membership_add(*, actor, team: Team, person, roles: Iterable[str] | None = None) -> Membership:
    """Add an existing person to `team` (a team admin: only someone who already shares one of their teams)."""
    _require_administrator(actor, team)
    visible = rules.is_superuser(actor) or (
        not person.is_superuser and team_members_for_user(actor).filter(pk=person.pk).exists()
    )
    if not visible:
        raise ValidationError({"user": _("No such person among the members of your teams.")})
    if Membership.objects.filter(team=team, user=person).exists():
        raise ValidationError({"user": _("%(person)s is already a member of %(team)s.")
                               % {"person": person.get_username(), "team": team.name}})
    membership = model_create(instance=Membership(team=team, user=person), actor=actor, team=team)
    if roles is not None:
        _set_roles(actor=actor, person=person, roles=clean_roles(roles), team=team, membership=membership)
    return membership


@transaction.atomic
def membership_set_roles(*, actor, membership: Membership, roles: Iterable[str]) -> bool:
    """Give the member exactly `roles`; True when they changed (and one audit entry was written)."""
    _require_administrator(actor, membership.team)
    return _set_roles(actor=actor, person=membership.user, roles=clean_roles(roles), team=membership.team,
                      membership=membership)


@transaction.atomic
def membership_remove(*, actor, membership: Membership) -> None:
    """Take a person out of a team. Someone left in no team also loses their roles (both changes audited)."""
    team, person = membership.team, membership.user
    _require_administrator(actor, team)
    acting_superuser = rules.is_superuser(actor)
    if person.is_superuser and not acting_superuser:
        raise ValidationError(_("A superuser's memberships are changed by a superuser."))
    if person.pk == actor.pk and not acting_superuser:
        raise ValidationError(_("You cannot remove yourself from a team; ask another admin or a superuser."))
    record_change(actor=actor, instance=membership, action=ObjectChange.Action.DELETE, team=team,
                  before=model_snapshot(membership), message="member removed")
    membership.delete()
    if not Membership.objects.filter(user=person).exists():
        held = roles_of(person)
        if held:
            person.groups.remove(*Group.objects.filter(name__in=held))
            record_change(actor=actor, instance=person, action=ObjectChange.Action.UPDATE, team=team,
                          before={"roles": sorted(held)}, after={"roles": []}, message="roles cleared: in no team")


@dataclass(frozen=True)
class PoolWithToken:
    pool: AgentPool
    token: RegistrationToken
    secret: str  # the registration token, shown once; only its hash is stored


@transaction.atomic
def pool_with_token_create(
    *,
    actor,
    team: Team,
    name: str,
    description: str = "",
    token_description: str = "",
    single_use: bool = False,
    expires_at: datetime | None = None,
) -> PoolWithToken:
    """A new agent pool of `team` and its first registration token (apps/fleet/services), for a team admin."""
    _require_administrator(actor, team)
    pool = pool_create(team=team, name=name, description=description, actor=actor)
    token, secret = registration_token_create(
        pool=pool, actor=actor, description=token_description, single_use=single_use, expires_at=expires_at
    )
    return PoolWithToken(pool=pool, token=token, secret=secret)
