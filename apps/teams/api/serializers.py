"""Serializers of the team administration API. No field sets `is_staff` or `is_superuser`: those stay with
superusers in the admin site."""

from django.contrib.auth import get_user_model
from rest_framework import serializers

from apps.accounts.models import Membership, Team
from apps.accounts.roles import Role
from apps.common.api_fields import CreateOnlyFieldsMixin, ScopedSlugRelatedField
from apps.fleet.api.serializers import AgentPoolSerializer
from apps.teams.selectors import member_roles, people_addable_by


class TeamSerializer(serializers.ModelSerializer):
    class Meta:
        model = Team
        fields = ["id", "name", "slug", "reporting_currency", "created_at"]
        read_only_fields = ["id", "created_at"]


class RolesField(serializers.ListField):
    """The member's roles (they hold in every team of the person); writing gives exactly these."""

    def __init__(self, **kwargs):
        super().__init__(child=serializers.ChoiceField(choices=Role.choices), **kwargs)

    def get_attribute(self, instance):
        return member_roles(instance)


class MembershipSerializer(CreateOnlyFieldsMixin, serializers.ModelSerializer):
    # An existing person by username, among those one may add (a superuser: anyone; a team admin: the members of
    # their teams). Create only: a membership never moves to another person.
    user = ScopedSlugRelatedField(slug_field="username", model=get_user_model(), for_user=people_addable_by)
    team = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    roles = RolesField(required=False)
    email = serializers.CharField(source="user.email", read_only=True)  # "" when none was given

    class Meta:
        model = Membership
        fields = ["id", "team", "user", "email", "roles", "created_at"]
        read_only_fields = ["id", "created_at"]
        create_only_fields = ["user"]


class PersonCreateSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    email = serializers.EmailField(required=False, allow_blank=True, default="")
    first_name = serializers.CharField(max_length=150, required=False, allow_blank=True, default="")
    last_name = serializers.CharField(max_length=150, required=False, allow_blank=True, default="")
    roles = serializers.ListField(child=serializers.ChoiceField(choices=Role.choices), required=False, default=list)


class PersonCreatedSerializer(serializers.Serializer):
    membership = MembershipSerializer(read_only=True)
    one_time_password = serializers.CharField(
        read_only=True, help_text="Shown in this answer only; the person replaces it after logging in."
    )


class PoolCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    token_description = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    single_use = serializers.BooleanField(required=False, default=False)
    expires_in_days = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=1,
                                               max_value=365)


class RegistrationTokenSecretSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    prefix = serializers.CharField(read_only=True)
    secret = serializers.CharField(read_only=True, help_text="Shown in this answer only; only its hash is stored.")
    single_use = serializers.BooleanField(read_only=True)
    expires_at = serializers.DateTimeField(read_only=True, allow_null=True)
    register_command = serializers.CharField(read_only=True)


class PoolCreatedSerializer(serializers.Serializer):
    pool = AgentPoolSerializer(read_only=True)
    registration_token = RegistrationTokenSecretSerializer(read_only=True)
