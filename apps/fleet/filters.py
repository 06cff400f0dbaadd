"""One FilterSet per model, shared by the agent API and the agent list page."""

import django_filters
from django import forms
from django.utils.translation import gettext_lazy as _

from apps.fleet.models import Agent, AgentPool, AgentStatus


def _pools(request):
    return AgentPool.objects.for_user(getattr(request, "user", None))


class AgentFilterSet(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(label=_("Status"), choices=AgentStatus.choices)
    # Pool names are data: the select is marked translate="no" (its empty choice is only dashes).
    pool = django_filters.ModelChoiceFilter(label=_("Pool"), queryset=_pools,
                                            widget=forms.Select(attrs={"translate": "no"}))

    class Meta:
        model = Agent
        fields = ["status", "pool"]
