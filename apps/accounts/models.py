"""Teams own records; memberships say who sees them. Roles (what a person may do) are groups, see roles.py."""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _


class Team(models.Model):
    name = models.CharField(_("name"), max_length=120, unique=True)
    slug = models.SlugField(_("slug"), max_length=60, unique=True)
    reporting_currency = models.CharField(
        _("reporting currency"),
        max_length=3,
        default="USD",
        validators=[RegexValidator(r"^[A-Z]{3}$", _("Use an ISO 4217 code such as USD, EUR or IDR."))],
        help_text=_("Quotes in other currencies are converted to this one with a sourced exchange rate."),
    )
    stale_price_age_days = models.PositiveIntegerField(
        _("price stale after (days)"),
        default=30,
        validators=[MinValueValidator(1), MaxValueValidator(3650)],
        help_text=_("A price older than this is shown as stale even before its valid-until date."),
    )
    revisit_price_change_percent = models.DecimalField(
        _("revisit when a cited price changes by more than (%)"),
        max_digits=5,
        decimal_places=2,
        default=10,
        validators=[MinValueValidator(0), MaxValueValidator(1000)],
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name = _("team")
        verbose_name_plural = _("teams")
        constraints = [
            models.CheckConstraint(condition=Q(stale_price_age_days__gte=1), name="team_stale_age_positive"),
        ]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships", verbose_name=_("team"))
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships", verbose_name=_("user")
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        ordering = ["team__name"]
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="membership_unique_team_user")]

    def __str__(self) -> str:
        return f"{self.user} ∈ {self.team}"


class ApiKey(models.Model):
    """A person's key for the user API (`Authorization: Token <key>`). Only its SHA-256 digest is stored.

    The key itself is shown once, when it is created (apps/accounts/api_keys.py); `prefix` identifies it in lists.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys", verbose_name=_("user")
    )
    name = models.CharField(_("name"), max_length=120, blank=True, help_text=_("What the key is for."))
    prefix = models.CharField(_("prefix"), max_length=16, editable=False)
    digest = models.CharField(_("SHA-256 digest"), max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    last_used_at = models.DateTimeField(_("last used at"), null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = _("API key")
        verbose_name_plural = _("API keys")

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


# Each person's interface language lives in its own module (the switcher, the login hook and the middleware beside it).
from apps.accounts.language import UserLanguage  # noqa: E402, F401
