import pytest

from tests.factories import UserFactory


@pytest.fixture
def team_admin(team):
    """A team admin of `team`: the admin role, a member, not staff, not superuser."""
    return UserFactory(username="ada", roles=["admin"], teams=[team])


@pytest.fixture
def superuser(db):
    return UserFactory(username="root", is_superuser=True, is_staff=True)
