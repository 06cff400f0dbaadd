"""The team administration API: teams, memberships and their roles, people, and a pool with its first token.

Teams are listed for every role (one's own teams; every team for a superuser); the rest is for team admins, within
the teams they administer: another team's objects answer 404. Every write goes through apps/teams/services (audited).
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.models import Membership
from apps.accounts.permissions import HasAnyRole
from apps.accounts.selectors import teams_for_user
from apps.fleet.views import register_command
from apps.teams import rules, selectors, services
from apps.teams.api.serializers import (
    MembershipSerializer,
    PersonCreatedSerializer,
    PersonCreateSerializer,
    PoolCreatedSerializer,
    PoolCreateSerializer,
    TeamSerializer,
)


class AdministersTeams(HasAnyRole):
    """Superusers and holders of the admin role; which teams is decided by the queryset (404 for others)."""

    message = _("Only team admins and superusers administer teams.")

    def has_permission(self, request, view) -> bool:
        return super().has_permission(request, view) and rules.may_open_administration(request.user)


class TeamViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet):
    """Your teams (every team for a superuser). Creating one: superusers; an admin only while no team exists (the
    first run), who then becomes its first member."""

    serializer_class = TeamSerializer
    ordering_fields = ["name", "created_at"]

    def get_queryset(self):
        return teams_for_user(self.request.user).order_by("name", "pk")

    def perform_create(self, serializer):
        serializer.instance = services.team_create(actor=self.request.user, **serializer.validated_data)


class MembershipViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """The members of a team you administer, with their roles. Create adds an existing person (by username);
    PATCH `roles` gives exactly those roles; DELETE takes the person out of the team (someone left in no team loses
    their roles). You never change a superuser, your own roles upwards, or the roles of someone who also works in a
    team you do not administer (roles hold in every team)."""

    serializer_class = MembershipSerializer
    permission_classes = [AdministersTeams]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def team(self):
        return selectors.team_for_admin(user=self.request.user, pk=self.kwargs["team_pk"])

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # the schema generator, with no team in the URL
            return Membership.objects.none()
        return selectors.memberships_for_admin(self.request.user).filter(team_id=self.kwargs["team_pk"])

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        self.team()  # 404 for a team one does not administer, before the body is read or a list comes out empty

    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = services.membership_add(
            actor=self.request.user, team=self.team(), person=data["user"], roles=data.get("roles")
        )

    def perform_update(self, serializer):
        if "roles" in serializer.validated_data:
            services.membership_set_roles(actor=self.request.user, membership=serializer.instance,
                                          roles=serializer.validated_data["roles"])
        serializer.instance = self.get_queryset().get(pk=serializer.instance.pk)  # the roles as stored now

    def perform_destroy(self, instance):
        services.membership_remove(actor=self.request.user, membership=instance)


class PersonCreateView(APIView):
    """Create a person in a team you administer, with roles and a generated one-time password (in this answer only).
    Staff and superuser rights are never set here."""

    permission_classes = [AdministersTeams]

    @extend_schema(request=PersonCreateSerializer, responses={201: PersonCreatedSerializer})
    def post(self, request, team_pk: int):
        team = selectors.team_for_admin(user=request.user, pk=team_pk)
        serializer = PersonCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        created = services.person_create(actor=request.user, team=team, **serializer.validated_data)
        membership = selectors.membership_for_admin(user=request.user, pk=created.membership.pk)
        body = {
            "membership": MembershipSerializer(membership, context={"request": request}).data,
            "one_time_password": created.one_time_password,
        }
        return Response(body, status=status.HTTP_201_CREATED, headers={"Cache-Control": "no-store"})


class PoolCreateView(APIView):
    """Create an agent pool in a team you administer and its first registration token (the secret is in this answer
    only, with the `dossier-agent register` command that uses it)."""

    permission_classes = [AdministersTeams]

    @extend_schema(request=PoolCreateSerializer, responses={201: PoolCreatedSerializer})
    def post(self, request, team_pk: int):
        team = selectors.team_for_admin(user=request.user, pk=team_pk)
        serializer = PoolCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        days = data["expires_in_days"]
        created = services.pool_with_token_create(
            actor=request.user, team=team, name=data["name"], description=data["description"],
            token_description=data["token_description"], single_use=data["single_use"],
            expires_at=timezone.now() + timedelta(days=days) if days else None,
        )
        body = PoolCreatedSerializer({
            "pool": created.pool,
            "registration_token": {
                "id": created.token.pk, "prefix": created.token.token_prefix, "secret": created.secret,
                "single_use": created.token.single_use, "expires_at": created.token.expires_at,
                "register_command": register_command(request, created.secret),
            },
        }, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Cache-Control": "no-store"})
