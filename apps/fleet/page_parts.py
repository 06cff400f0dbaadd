"""What the fleet shows on the pages of lower apps (registered in FleetConfig.ready, see apps/common/page_parts.py):
the agents on a candidate's node."""

from __future__ import annotations

from django.template.loader import render_to_string

from apps.common import page_parts


def agents_on_candidate(request, *, candidate) -> str:
    return render_to_string("fleet/partials/candidate_agents.html", {"candidate": candidate}, request=request)


def register() -> None:
    page_parts.register("quotes.candidate.agents", agents_on_candidate)
