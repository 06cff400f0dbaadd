"""Agents on candidate GPU nodes, the pools they register into, and what they report about their hardware."""

from __future__ import annotations

from datetime import timedelta

from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.accounts.scoping import scoped_queryset
from apps.common.models import CreatedByModel, TeamOwnedModel, team_foreign_key


class AgentPool(TeamOwnedModel):
    """A group of agents (usually the nodes of one vendor trial); jobs target a pool or one of its agents."""

    team = team_foreign_key("agent_pools")
    name = models.CharField(_("name"), max_length=100)
    description = models.TextField(_("description"), blank=True)
    is_active = models.BooleanField(
        _("active"), default=True, help_text=_("A disabled pool's agents can neither register nor claim jobs.")
    )
    created_by = None  # the audit log says who made the pool

    class Meta:
        ordering = ["name"]
        verbose_name = _("agent pool")
        verbose_name_plural = _("agent pools")
        constraints = [models.UniqueConstraint(fields=["team", "name"], name="fleet_pool_unique_team_name")]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("fleet:pool-detail", args=[self.pk])


class RegistrationToken(CreatedByModel):
    """A secret an operator gives to `dossier-agent register`; stored as its SHA-256 only."""

    pool = models.ForeignKey(AgentPool, on_delete=models.CASCADE, related_name="registration_tokens",
                             verbose_name=_("pool"))
    description = models.CharField(_("description"), max_length=200, blank=True)
    token_hash = models.CharField(_("token hash"), max_length=64, unique=True, editable=False)
    token_prefix = models.CharField(_("token prefix"), max_length=16, editable=False)
    single_use = models.BooleanField(_("single use"), default=False)
    expires_at = models.DateTimeField(_("expires at"), null=True, blank=True)
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)
    use_count = models.PositiveIntegerField(_("registrations"), default=0)
    last_used_at = models.DateTimeField(_("last used at"), null=True, blank=True)

    objects = scoped_queryset("pool__team").as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("registration token")
        verbose_name_plural = _("registration tokens")

    def __str__(self) -> str:
        return f"{self.token_prefix}…"

    def unusable_reason(self, now=None) -> str | None:
        """Why this token cannot register an agent now (a machine-friendly word), or None when it can."""
        now = now or timezone.now()
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= now:
            return "expired"
        if self.single_use and self.use_count > 0:
            return "used"
        return None


class AgentStatus(models.TextChoices):
    ONLINE = "online", _("online")
    BUSY = "busy", _("busy")
    OFFLINE = "offline", _("offline")
    LOST = "lost", _("lost")


class AgentCommand(models.TextChoices):
    PAUSE = "pause", _("pause")
    RESUME = "resume", _("resume")
    STOP = "stop", _("stop")


class Agent(models.Model):
    """A `dossier-agent` process on one node, known by the SHA-256 of its agent token."""

    pool = models.ForeignKey(AgentPool, on_delete=models.PROTECT, related_name="agents", verbose_name=_("pool"))
    name = models.CharField(_("name"), max_length=100)
    machine_id = models.CharField(_("machine id"), max_length=64)
    token_hash = models.CharField(_("token hash"), max_length=64, unique=True, editable=False)
    token_prefix = models.CharField(_("token prefix"), max_length=16, editable=False)
    registration_token = models.ForeignKey(RegistrationToken, on_delete=models.SET_NULL, null=True, blank=True,
                                           related_name="agents", verbose_name=_("registered with"))
    version = models.CharField(_("agent version"), max_length=40)
    protocol_version = models.PositiveSmallIntegerField(_("protocol version"), default=1)
    job_kinds = models.JSONField(_("job kinds"), default=list, blank=True)
    operations = models.JSONField(
        _("declared operations"), default=list, blank=True,
        help_text=_("Disruptive operations the node's operator allows for failure tests."),
    )
    status = models.CharField(_("status"), max_length=10, choices=AgentStatus.choices, default=AgentStatus.ONLINE)
    reported_state = models.CharField(_("reported state"), max_length=20, blank=True)
    advertise_address = models.GenericIPAddressField(
        _("advertised address"), null=True, blank=True,
        help_text=_("Where the other ranks of a job group reach this node; else the address its claims come from."),
    )
    last_heartbeat_at = models.DateTimeField(_("last heartbeat"), null=True, blank=True, db_index=True)
    uptime_s = models.FloatField(_("uptime (s)"), null=True, blank=True)
    spool_pending = models.PositiveIntegerField(_("items waiting in the agent's spool"), default=0)
    reported_inventory_sha256 = models.CharField(_("reported inventory hash"), max_length=64, blank=True)
    pending_command = models.CharField(_("pending command"), max_length=10, choices=AgentCommand.choices, blank=True)
    candidate = models.ForeignKey(
        "quotes.Candidate", on_delete=models.SET_NULL, null=True, blank=True, related_name="agents",
        verbose_name=_("candidate"),
        help_text=_("The quoted node this agent runs on: its inventory is checked against it."),
    )
    inventory_expected = models.JSONField(_("expected node"), null=True, blank=True)
    inventory_mismatches = models.JSONField(_("inventory mismatches"), default=list, blank=True)
    inventory_checked_at = models.DateTimeField(_("inventory checked at"), null=True, blank=True)
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)
    registered_at = models.DateTimeField(_("registered at"), default=timezone.now)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    objects = scoped_queryset("pool__team").as_manager()

    class Meta:
        ordering = ["pool__name", "name", "pk"]
        verbose_name = _("agent")
        verbose_name_plural = _("agents")
        constraints = [
            models.UniqueConstraint(fields=["pool", "machine_id"], name="fleet_agent_unique_pool_machine"),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("fleet:agent-detail", args=[self.pk])

    @property
    def team(self):
        return self.pool.team

    def status_at(self, now, offline_after_s: int) -> str:
        """The status to show: online/busy turn offline when heartbeats stopped, even before the reaper runs."""
        if self.revoked_at is not None:
            return AgentStatus.OFFLINE
        stale = self.last_heartbeat_at is None or self.last_heartbeat_at < now - timedelta(seconds=offline_after_s)
        if self.status in (AgentStatus.ONLINE, AgentStatus.BUSY) and stale:
            return AgentStatus.OFFLINE
        return self.status

    def latest_inventory(self) -> InventorySnapshot | None:
        return self.inventory_snapshots.order_by("-taken_at", "-pk").first()


class InventorySource(models.TextChoices):
    REGISTER = "register", _("registration")
    START = "start", _("job start")
    JOB = "job", _("inventory job")


class InventorySnapshot(models.Model):
    """The hardware and software an agent reported at one moment (docs/agent-protocol.md §6)."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="inventory_snapshots",
                              verbose_name=_("agent"))
    source = models.CharField(_("source"), max_length=10, choices=InventorySource.choices)
    sha256 = models.CharField("SHA-256", max_length=64)  # a symbol, the same in every language: not translated
    data = models.JSONField(_("inventory"))
    gpu_count = models.PositiveSmallIntegerField(_("GPU count"), default=0)
    gpu_names = models.CharField(_("GPU models"), max_length=300, blank=True)
    taken_at = models.DateTimeField(_("taken at"), default=timezone.now)

    objects = scoped_queryset("agent__pool__team").as_manager()

    class Meta:
        ordering = ["-taken_at", "-pk"]
        verbose_name = _("inventory snapshot")
        verbose_name_plural = _("inventory snapshots")
        indexes = [models.Index(fields=["agent", "taken_at"], name="fleet_inventory_agent_time")]
        constraints = [
            models.CheckConstraint(condition=~Q(sha256=""), name="fleet_inventory_sha256_set"),
        ]

    def __str__(self) -> str:
        return f"{self.agent} @ {self.taken_at:%Y-%m-%d %H:%M}"
