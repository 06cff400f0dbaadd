"""The change log is append-only: no entry can be changed or deleted through the ORM."""

import pytest
from django.contrib.auth import get_user_model

from apps.audit.models import AppendOnlyError, ObjectChange
from apps.audit.services import model_snapshot, record_change


@pytest.fixture
def entry(team, platform_user):
    return record_change(
        actor=platform_user, instance=team, action="update", before={"name": "Old"}, after=model_snapshot(team)
    )


def test_saving_an_existing_entry_raises(entry):
    entry.message = "rewritten"
    with pytest.raises(AppendOnlyError):
        entry.save()
    assert ObjectChange.objects.get(pk=entry.pk).message == ""


def test_deleting_an_entry_raises(entry):
    with pytest.raises(AppendOnlyError):
        entry.delete()
    assert ObjectChange.objects.filter(pk=entry.pk).exists()


def test_queryset_update_raises(entry):
    with pytest.raises(AppendOnlyError):
        ObjectChange.objects.filter(pk=entry.pk).update(message="rewritten")
    with pytest.raises(AppendOnlyError):
        ObjectChange.objects.all().update(action="delete")
    assert ObjectChange.objects.get(pk=entry.pk).action == "update"


def test_queryset_delete_raises(entry):
    with pytest.raises(AppendOnlyError):
        ObjectChange.objects.filter(pk=entry.pk).delete()
    with pytest.raises(AppendOnlyError):
        ObjectChange.objects.all().delete()
    assert ObjectChange.objects.count() == 1


def test_new_entries_can_still_be_added(entry, team, platform_user):
    record_change(actor=platform_user, instance=team, action="update", message="second")
    assert ObjectChange.objects.count() == 2


def test_deleting_the_author_keeps_the_entry_and_their_name(entry, platform_user):
    get_user_model().objects.filter(pk=platform_user.pk).delete()
    kept = ObjectChange.objects.get(pk=entry.pk)
    assert kept.actor is None
    assert kept.actor_label == "pat"


def test_admin_site_offers_no_add_change_or_delete(client_for, db):
    from tests.factories import UserFactory

    superuser = UserFactory(username="root", is_superuser=True, is_staff=True)
    client = client_for(superuser)
    assert client.get("/admin/audit/objectchange/").status_code == 200
    assert client.get("/admin/audit/objectchange/add/").status_code == 403
