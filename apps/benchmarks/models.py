"""Benchmark plans, the jobs they expand into, each job's attempts on agents, and what the attempts sent back."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.accounts.fields import user_foreign_key
from apps.accounts.scoping import TeamScopedQuerySet, scoped_queryset
from apps.common.models import TeamOwnedModel, team_foreign_key


class PlanStatus(models.TextChoices):
    DRAFT = "draft", _("draft")
    DISPATCHING = "dispatching", _("dispatching")
    DISPATCHED = "dispatched", _("dispatched")


class BenchmarkPlan(TeamOwnedModel):
    """What to measure and where: a list of jobs (kind, spec, acceptance criteria) for a pool or one agent."""

    team = team_foreign_key("benchmark_plans")
    name = models.CharField(_("name"), max_length=200)
    description = models.TextField(_("description"), blank=True)
    spec = models.JSONField(_("jobs"), help_text=_("The job list; see the plan form for its shape."))
    target_pool = models.ForeignKey("fleet.AgentPool", on_delete=models.PROTECT, related_name="benchmark_plans",
                                    verbose_name=_("agent pool"))
    target_agent = models.ForeignKey(
        "fleet.Agent", on_delete=models.PROTECT, null=True, blank=True, related_name="benchmark_plans",
        verbose_name=_("agent"), help_text=_("Leave empty to let any capable agent of the pool run the jobs."),
    )
    status = models.CharField(_("status"), max_length=12, choices=PlanStatus.choices, default=PlanStatus.DRAFT)
    dispatch_requested_at = models.DateTimeField(_("dispatch requested at"), null=True, blank=True)
    dispatched_at = models.DateTimeField(_("dispatched at"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("benchmark plan")
        verbose_name_plural = _("benchmark plans")
        constraints = [
            models.CheckConstraint(
                condition=Q(status="draft") | Q(dispatch_requested_at__isnull=False),
                name="benchmarks_plan_dispatch_requested_set",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("benchmarks:plan-detail", args=[self.pk])


class JobStatus(models.TextChoices):
    QUEUED = "queued", _("queued")
    CLAIMED = "claimed", _("claimed")
    RUNNING = "running", _("running")
    SUCCEEDED = "succeeded", _("succeeded")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")


ACTIVE_JOB_STATUSES = (JobStatus.CLAIMED, JobStatus.RUNNING)
FINAL_JOB_STATUSES = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)
# Where a list of jobs keeps its canonical results, loaded in one query (selectors.jobs_with_canonical_results).
CANONICAL_RESULTS_ATTRIBUTE = "prefetched_canonical_results"


class JobGroupStatus(models.TextChoices):
    WAITING = "waiting", _("waiting for every rank")
    SUCCEEDED = "succeeded", _("succeeded")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")


class JobGroup(models.Model):
    """Jobs that must run at the same time, one per rank (a multi-node all-reduce), and their meeting point.

    Every rank's job is claimed like any other; once every rank of the current generation is claimed, the claim,
    start and lease replies carry the rendezvous (rank 0's address and `master_port`). When one rank's attempt is
    lost, fails or is handed back, the whole group starts again as the next generation (docs/agent-protocol.md §8).
    """

    team = team_foreign_key("job_groups")
    plan = models.ForeignKey(BenchmarkPlan, on_delete=models.PROTECT, null=True, blank=True, related_name="groups",
                             verbose_name=_("plan"))
    kind = models.CharField(_("kind"), max_length=32)
    world_size = models.PositiveSmallIntegerField(_("ranks"))
    generation = models.PositiveIntegerField(_("generation"), default=1)
    max_generations = models.PositiveIntegerField(_("generation limit"), default=3)
    master_port = models.PositiveIntegerField(_("rendezvous port"))
    status = models.CharField(_("status"), max_length=10, choices=JobGroupStatus.choices,
                              default=JobGroupStatus.WAITING)
    rerun_reason = models.CharField(_("last re-run reason"), max_length=300, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)

    objects = TeamScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("job group")
        verbose_name_plural = _("job groups")
        constraints = [
            models.CheckConstraint(condition=Q(world_size__gte=1), name="benchmarks_group_world_size_positive"),
            models.CheckConstraint(condition=Q(generation__lte=models.F("max_generations")),
                                   name="benchmarks_group_generations_bounded"),
        ]

    def __str__(self) -> str:
        return f"g-{self.pk} {self.kind} ×{self.world_size}"

    @property
    def public_id(self) -> str:
        return f"g-{self.pk}"


class Job(models.Model):
    """One unit of work for one agent. Its spec and acceptance criteria are frozen when it is dispatched."""

    team = team_foreign_key("benchmark_jobs")
    plan = models.ForeignKey(BenchmarkPlan, on_delete=models.PROTECT, null=True, blank=True, related_name="jobs",
                             verbose_name=_("plan"))
    position = models.PositiveIntegerField(_("position in the plan"), default=0)
    kind = models.CharField(_("kind"), max_length=32)
    spec = models.JSONField(_("spec"), default=dict)
    spec_sha256 = models.CharField(_("spec SHA-256"), max_length=64)
    acceptance_criteria = models.JSONField(_("acceptance criteria"), default=dict, blank=True)
    required_operations = models.JSONField(_("required operations"), default=list, blank=True)
    target_pool = models.ForeignKey("fleet.AgentPool", on_delete=models.PROTECT, null=True, blank=True,
                                    related_name="jobs", verbose_name=_("agent pool"))
    target_agent = models.ForeignKey("fleet.Agent", on_delete=models.PROTECT, null=True, blank=True,
                                     related_name="targeted_jobs", verbose_name=_("agent"))
    status = models.CharField(_("status"), max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    attempt_count = models.PositiveIntegerField(_("attempts"), default=0)
    max_attempts = models.PositiveIntegerField(_("attempt limit"), default=3)
    cancel_requested = models.BooleanField(_("cancellation requested"), default=False)
    cancel_reason = models.CharField(_("cancellation reason"), max_length=200, blank=True)
    cancel_requested_at = models.DateTimeField(_("cancellation requested at"), null=True, blank=True)
    cancel_requested_by = user_foreign_key(_("cancelled by"))
    failure_reason = models.CharField(_("failure reason"), max_length=300, blank=True)
    offline_run_id = models.CharField(_("offline run id"), max_length=64, blank=True)
    candidate = models.ForeignKey(
        "quotes.Candidate", on_delete=models.SET_NULL, null=True, blank=True, related_name="benchmark_jobs",
        verbose_name=_("candidate"),
        help_text=_("The candidate this job measures: named by its plan, else the candidate of the agent's node."),
    )
    group = models.ForeignKey(JobGroup, on_delete=models.PROTECT, null=True, blank=True, related_name="jobs",
                              verbose_name=_("job group"))
    group_rank = models.PositiveSmallIntegerField(_("rank in the group"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)

    objects = TeamScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = _("job")
        verbose_name_plural = _("jobs")
        indexes = [models.Index(fields=["status", "kind", "created_at"], name="benchmarks_job_claim")]
        constraints = [
            models.CheckConstraint(
                condition=Q(target_pool__isnull=False) | Q(target_agent__isnull=False),
                name="benchmarks_job_has_target",
            ),
            models.CheckConstraint(condition=Q(attempt_count__lte=models.F("max_attempts")),
                                   name="benchmarks_job_attempts_bounded"),
            models.UniqueConstraint(
                fields=["target_agent", "offline_run_id"],
                condition=~Q(offline_run_id=""),
                name="benchmarks_job_unique_offline_run",
            ),
            models.UniqueConstraint(fields=["group", "group_rank"], condition=Q(group__isnull=False),
                                    name="benchmarks_job_unique_group_rank"),
            models.CheckConstraint(condition=Q(group__isnull=True) | Q(group_rank__isnull=False),
                                   name="benchmarks_job_group_has_rank"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.kind}"

    def get_absolute_url(self) -> str:
        return reverse("benchmarks:job-detail", args=[self.pk])

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_JOB_STATUSES

    def canonical_result(self) -> Result | None:
        """The result that stands for the job; read from `jobs_with_canonical_results` when a list loaded them."""
        if hasattr(self, CANONICAL_RESULTS_ATTRIBUTE):
            return next(iter(getattr(self, CANONICAL_RESULTS_ATTRIBUTE)), None)
        return self.results.filter(canonical=True).first()


class AttemptStatus(models.TextChoices):
    CLAIMED = "claimed", _("claimed")
    RUNNING = "running", _("running")
    SUCCEEDED = "succeeded", _("succeeded")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")
    HANDED_BACK = "handed_back", _("handed back")
    AGENT_LOST = "agent_lost", _("agent lost")


LIVE_ATTEMPT_STATUSES = (AttemptStatus.CLAIMED, AttemptStatus.RUNNING)


class JobAttempt(models.Model):
    """One try of a job by one agent, fenced by its number and its own job token."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="attempts", verbose_name=_("job"))
    number = models.PositiveIntegerField(_("attempt"))
    agent = models.ForeignKey("fleet.Agent", on_delete=models.PROTECT, related_name="attempts",
                              verbose_name=_("agent"))
    token_hash = models.CharField(_("job token hash"), max_length=64, unique=True, editable=False)
    status = models.CharField(_("status"), max_length=12, choices=AttemptStatus.choices,
                              default=AttemptStatus.CLAIMED)
    claimed_at = models.DateTimeField(_("claimed at"), default=timezone.now)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    lease_expires_at = models.DateTimeField(_("lease expires at"))
    ended_at = models.DateTimeField(_("ended at"), null=True, blank=True)
    progress = models.FloatField(_("progress"), null=True, blank=True)
    progress_message = models.CharField(_("progress message"), max_length=300, blank=True)
    start_inventory = models.ForeignKey("fleet.InventorySnapshot", on_delete=models.SET_NULL, null=True, blank=True,
                                        related_name="+", verbose_name=_("inventory at start"))
    finish_idempotency_key = models.CharField(_("finish idempotency key"), max_length=64, blank=True)
    finish_body_sha256 = models.CharField(_("finish body SHA-256"), max_length=64, blank=True)
    finish_reply_status = models.PositiveSmallIntegerField(_("finish reply status"), null=True, blank=True)
    finish_reply = models.JSONField(_("finish reply"), null=True, blank=True)
    client_address = models.GenericIPAddressField(_("claimed from"), null=True, blank=True,
                                                  help_text=_("The address the claim came from, as the server saw it."))
    group_generation = models.PositiveIntegerField(_("group generation"), null=True, blank=True)

    objects = scoped_queryset("job__team").as_manager()

    class Meta:
        ordering = ["job", "number"]
        verbose_name = _("job attempt")
        verbose_name_plural = _("job attempts")
        indexes = [models.Index(fields=["status", "lease_expires_at"], name="benchmarks_attempt_lease")]
        constraints = [
            models.UniqueConstraint(fields=["job", "number"], name="benchmarks_attempt_unique_number"),
            models.CheckConstraint(condition=Q(number__gte=1), name="benchmarks_attempt_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.job} attempt {self.number}"

    @property
    def is_live(self) -> bool:
        return self.status in LIVE_ATTEMPT_STATUSES


class JobEvent(models.Model):
    """Progress, log lines, telemetry: numbered per attempt, first write wins."""

    attempt = models.ForeignKey(JobAttempt, on_delete=models.CASCADE, related_name="events", verbose_name=_("attempt"))
    seq = models.PositiveIntegerField(_("sequence number"))
    kind = models.CharField(_("kind"), max_length=32)
    ts = models.DateTimeField(_("time"))
    data = models.JSONField(_("data"), default=dict)
    received_at = models.DateTimeField(_("received at"), default=timezone.now)

    objects = scoped_queryset("attempt__job__team").as_manager()

    class Meta:
        ordering = ["attempt", "seq"]
        verbose_name = _("job event")
        verbose_name_plural = _("job events")
        constraints = [models.UniqueConstraint(fields=["attempt", "seq"], name="benchmarks_event_unique_seq")]

    def __str__(self) -> str:
        return f"{self.attempt} #{self.seq} {self.kind}"


class Artifact(models.Model):
    """Raw data an attempt uploaded, content-addressed by SHA-256; a pinned artifact is never purged."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="artifacts", verbose_name=_("job"))
    attempt = models.ForeignKey(JobAttempt, on_delete=models.CASCADE, related_name="artifacts",
                                verbose_name=_("attempt"))
    sha256 = models.CharField("SHA-256", max_length=64)  # a symbol, the same in every language: not translated
    name = models.CharField(_("file name"), max_length=200)
    media_type = models.CharField(_("media type"), max_length=100)
    size = models.PositiveBigIntegerField(_("size (bytes)"))
    storage_name = models.CharField(_("stored as"), max_length=300, blank=True)
    pinned = models.BooleanField(_("pinned"), default=False,
                                 help_text=_("Pinned artifacts are cited by a decision record and never purged."))
    created_at = models.DateTimeField(_("uploaded at"), default=timezone.now)
    purged_at = models.DateTimeField(_("purged at"), null=True, blank=True)

    objects = scoped_queryset("job__team").as_manager()

    class Meta:
        ordering = ["created_at", "pk"]
        verbose_name = _("artifact")
        verbose_name_plural = _("artifacts")
        constraints = [
            models.UniqueConstraint(fields=["job", "sha256"], name="benchmarks_artifact_unique_job_sha256"),
            models.CheckConstraint(condition=~Q(pinned=True, purged_at__isnull=False),
                                   name="benchmarks_artifact_pinned_never_purged"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.sha256[:12]})"

    def get_absolute_url(self) -> str:
        return reverse("benchmarks:artifact-download", args=[self.pk])


class ResultStatus(models.TextChoices):
    SUCCEEDED = "succeeded", _("succeeded")
    FAILED = "failed", _("failed")
    CANCELLED = "cancelled", _("cancelled")
    HANDED_BACK = "handed_back", _("handed back")


class Result(models.Model):
    """What one attempt's finish said, stored once. At most one result per job is canonical."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="results", verbose_name=_("job"))
    attempt = models.OneToOneField(JobAttempt, on_delete=models.CASCADE, related_name="result",
                                   verbose_name=_("attempt"))
    status = models.CharField(_("status"), max_length=12, choices=ResultStatus.choices)
    canonical = models.BooleanField(
        _("canonical"), default=False,
        help_text=_("The result that stands for the job; a late finish from a superseded attempt is kept, not "
                    "canonical."),
    )
    result = models.JSONField(_("result"), null=True, blank=True)
    error = models.JSONField(_("error"), null=True, blank=True)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"))
    event_count = models.PositiveIntegerField(_("events produced"), default=0)
    events_received = models.PositiveIntegerField(_("events received"), default=0)
    agent_version = models.CharField(_("agent version"), max_length=40, blank=True)
    spec = models.JSONField(_("spec (as dispatched)"), default=dict)
    spec_sha256 = models.CharField(_("spec SHA-256"), max_length=64)
    acceptance_criteria = models.JSONField(_("acceptance criteria (as dispatched)"), default=dict, blank=True)
    artifacts = models.ManyToManyField(Artifact, blank=True, related_name="results", verbose_name=_("artifacts"))
    recorded_at = models.DateTimeField(_("recorded at"), default=timezone.now)
    ingested_at = models.DateTimeField(_("ingested at"), null=True, blank=True, db_index=True)
    summary = models.JSONField(_("summary"), null=True, blank=True)
    rehearsal = models.BooleanField(
        _("rehearsal"), default=False,
        help_text=_("Run on a CPU or against the built-in mock serving stack: never a measurement of a GPU."),
    )
    rehearsal_reasons = models.JSONField(_("why a rehearsal"), default=list, blank=True)

    objects = scoped_queryset("job__team").as_manager()

    class Meta:
        ordering = ["job", "attempt__number"]
        verbose_name = _("result")
        verbose_name_plural = _("results")
        constraints = [
            models.UniqueConstraint(fields=["job"], condition=Q(canonical=True),
                                    name="benchmarks_result_one_canonical_per_job"),
        ]

    def __str__(self) -> str:
        return f"{self.attempt} → {self.status}"


class FigureMeasurement(models.Model):
    """The link that makes a candidate's figure measured: the canonical result of the job that measured it.

    The ingest (apps/benchmarks/measurements.py) writes the figure with source "measured" and this link in one
    transaction; a person cannot enter a measured figure. A rehearsal's figure (the result ran on a CPU or against the
    mock stack) is stored and linked with `rehearsal` set: it is shown as such and never counts as measured.
    It lives here, above evidence, because a lower app never points at a higher one.
    """

    figure = models.OneToOneField("evidence.CandidateFigure", on_delete=models.CASCADE, related_name="measurement",
                                  verbose_name=_("figure"))
    result = models.ForeignKey(Result, on_delete=models.CASCADE, related_name="figure_measurements",
                               verbose_name=_("result"))
    rehearsal = models.BooleanField(_("rehearsal"), default=False)
    created_at = models.DateTimeField(_("linked at"), default=timezone.now)

    objects = scoped_queryset("figure__candidate__team").as_manager()

    class Meta:
        ordering = ["figure"]
        verbose_name = _("figure measurement")
        verbose_name_plural = _("figure measurements")

    def __str__(self) -> str:
        return f"{self.figure} ← result {self.result_id}{' (rehearsal)' if self.rehearsal else ''}"
