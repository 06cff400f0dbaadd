"""Roles are groups created by a migration; the helpers that answer "does this user hold …?"."""

import importlib

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import AnonymousUser, Group, Permission

from apps.accounts.roles import Role, has_role, user_roles
from apps.accounts.services import role_grant
from apps.accounts.signals import ensure_role_groups
from tests.factories import UserFactory

role_groups_migration = importlib.import_module("apps.accounts.migrations.0002_role_groups")


def test_migration_created_one_group_per_role(db):
    assert set(Group.objects.values_list("name", flat=True)) >= set(Role.values)
    assert sorted(role_groups_migration.ROLE_NAMES) == sorted(Role.values)


def test_role_groups_migration_recreates_missing_groups(db):
    Group.objects.filter(name__in=Role.values).delete()
    role_groups_migration.create_role_groups(django_apps, schema_editor=None)
    assert set(Group.objects.filter(name__in=Role.values).values_list("name", flat=True)) == set(Role.values)


def test_groups_are_restored_after_a_flush(db):
    Group.objects.filter(name__in=Role.values).delete()
    ensure_role_groups(using="default")  # flush sends post_migrate without an app registry
    assert Group.objects.filter(name__in=Role.values).count() == len(Role.values)
    assert Group.objects.get(name=Role.ADMIN).permissions.filter(codename="change_gpuspec").exists()


def _admin_codenames() -> set[str]:
    return {
        f"{app_label}.{codename}"
        for app_label, codename in Permission.objects.filter(group__name=Role.ADMIN).values_list(
            "content_type__app_label", "codename"
        )
    }


def test_admin_role_manages_the_catalog_and_the_policy_but_no_people(db):
    """The admin group holds the global data's permissions and none over people, roles, teams, keys or the log:
    before, it held auth.change_user (and so could set is_superuser) and every team's audit log."""
    granted = _admin_codenames()
    assert {"catalog.change_gpuspec", "quotes.change_commitmenttier", "quotes.change_checklistquestion"} <= granted
    assert not {name for name in granted if name.split(".")[0] in {"auth", "accounts", "authtoken", "audit"}}


def test_a_stale_people_permission_is_taken_back_after_migrate(db):
    admin_group = Group.objects.get(name=Role.ADMIN)
    admin_group.permissions.add(Permission.objects.get(content_type__app_label="auth", codename="change_user"))
    ensure_role_groups(using="default")
    assert "auth.change_user" not in _admin_codenames()


def test_other_roles_hold_no_model_permission(db):
    assert not Permission.objects.filter(group__name__in=[Role.PLATFORM, Role.FINANCE, Role.PRODUCT]).exists()


def test_staff_admin_holds_no_permission_over_teams_or_users(admin_user):
    assert not admin_user.has_perm("accounts.change_team")
    assert not admin_user.has_perm("auth.change_user")
    assert not admin_user.has_perm("audit.change_objectchange")


def test_user_roles_lists_the_role_groups_only(db):
    Group.objects.create(name="book club")
    user = UserFactory(username="two-roles", roles=["platform", "finance"])
    user.groups.add(Group.objects.get(name="book club"))
    assert user_roles(user) == {"platform", "finance"}


def test_has_role_with_and_without_names(finance_user, roleless_user):
    assert has_role(finance_user)
    assert has_role(finance_user, Role.FINANCE, Role.ADMIN)
    assert not has_role(finance_user, Role.PLATFORM)
    assert not has_role(roleless_user)


def test_superuser_holds_every_role(db):
    superuser = UserFactory(username="root", is_superuser=True)
    assert user_roles(superuser) == set(Role.values)


def test_anonymous_user_holds_no_role():
    assert user_roles(AnonymousUser()) == frozenset()
    assert not has_role(AnonymousUser())


def test_role_grant_takes_effect_on_the_same_user_object(roleless_user):
    assert not has_role(roleless_user)  # caches the empty set on the object
    role_grant(user=roleless_user, role="product")
    assert has_role(roleless_user, Role.PRODUCT)


def test_role_grant_refuses_an_unknown_role(roleless_user):
    with pytest.raises(ValueError):
        role_grant(user=roleless_user, role="owner")
