"""Factories shared by every app's tests (factory_boy)."""

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from apps.accounts.models import Membership, Team

PASSWORD = "correct-horse-battery-staple"


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Team {n}")
    slug = factory.Sequence(lambda n: f"team-{n}")
    reporting_currency = "USD"


class UserFactory(factory.django.DjangoModelFactory):
    """A user; `roles=["platform"]` puts them in role groups, `teams=[team]` makes them members."""

    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda user: f"{user.username}@example.test")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def roles(self, create, extracted, **kwargs):
        for role in extracted or []:
            self.groups.add(Group.objects.get(name=role))

    @factory.post_generation
    def teams(self, create, extracted, **kwargs):
        for team in extracted or []:
            Membership.objects.get_or_create(team=team, user=self)

    @classmethod
    def _after_postgeneration(cls, instance, create, results=None):
        if create:
            instance.save()
