"""Browser pages of the benchmarks: plans, jobs, events, artifacts."""

from django.urls import path

from apps.benchmarks import views
from apps.benchmarks.job_plan_forms import PLAN_FORMS

app_name = "benchmarks"

urlpatterns = [
    path("", views.plan_list, name="plan-list"),
    path("plans/new/", views.plan_create_view, name="plan-create"),
    path("plans/<int:pk>/", views.plan_detail, name="plan-detail"),
    path("plans/<int:pk>/dispatch/", views.plan_dispatch_view, name="plan-dispatch"),
    path("plans/<int:pk>/edit/", views.plan_edit_view, name="plan-edit"),
    path("plans/<int:pk>/copy/", views.plan_copy_view, name="plan-copy"),
    # One create and one edit page per plan form: plan-sweep-create, plan-operations-edit, ...
    *(path(f"plans/new/{form.slug}/", views.plan_form_create_view, {"form_kind": kind}, name=f"plan-{form.slug}-create")
      for kind, form in PLAN_FORMS.items()),
    *(path(f"plans/<int:pk>/edit/{form.slug}/", views.plan_form_edit_view, {"form_kind": kind},
           name=f"plan-{form.slug}-edit") for kind, form in PLAN_FORMS.items()),
    path("agents/<int:agent_pk>/inventory/", views.run_inventory, name="run-inventory"),
    path("jobs/", views.job_list, name="job-list"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/progress/", views.job_progress, name="job-progress"),
    path("jobs/<int:pk>/events/", views.job_events_view, name="job-events"),
    path("jobs/<int:pk>/cancel/", views.job_cancel_view, name="job-cancel"),
    path("artifacts/<int:pk>/download/", views.artifact_download, name="artifact-download"),
    path("candidates/<int:candidate_pk>/memory-fit/", views.memory_fit_plan_create_view, name="memory-fit-plan"),
    path("memory-fit/residuals/", views.memory_fit_residuals_view, name="memory-fit-residuals"),
]
