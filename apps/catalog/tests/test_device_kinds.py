"""Device kinds: a MIG profile must name its whole parent GPU and its share; any other device has neither."""

import datetime
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.utils import translation

from apps.catalog.models import DeviceKind, FormFactor, SpecKey
from apps.catalog.services import gpu_model_create, gpu_spec_set
from apps.catalog.tests.factories import GpuModelFactory

pytestmark = pytest.mark.django_db


def mig_fields(parent_gpu, **overrides):
    fields = {
        "name": parent_gpu.name,
        "variant": "SXM MIG 2g.20gb",
        "form_factor": FormFactor.SXM,
        "memory_type": "HBM3",
        "device_kind": DeviceKind.MIG,
        "parent": parent_gpu,
        "compute_slices": 2,
        "compute_slices_of": 7,
        "memory_slices": 2,
        "memory_slices_of": 8,
    }
    return fields | overrides


def test_a_mig_profile_is_created_with_its_parent_and_share():
    parent = GpuModelFactory()
    mig = gpu_model_create(actor="test", **mig_fields(parent))
    assert (mig.parent, mig.is_mig, str(mig.compute_share), str(mig.memory_share)) == (parent, True, "2/7", "1/4")


@pytest.mark.parametrize(
    "overrides",
    [
        {"parent": None},
        {"compute_slices": None},
        {"memory_slices": 9},
        {"compute_slices": 0},
    ],
)
def test_a_mig_profile_without_parent_or_with_an_impossible_share_is_refused(overrides):
    with pytest.raises(ValidationError):
        gpu_model_create(actor="test", **mig_fields(GpuModelFactory(), **overrides))


def test_a_whole_gpu_with_a_share_is_refused():
    with pytest.raises(ValidationError):
        gpu_model_create(
            actor="test",
            name="NVIDIA X",
            variant="PCIe",
            form_factor=FormFactor.PCIE,
            memory_type="GDDR6",
            compute_slices=1,
            compute_slices_of=7,
            memory_slices=1,
            memory_slices_of=8,
        )


def test_the_parent_of_a_mig_profile_must_be_a_whole_gpu():
    mig = gpu_model_create(actor="test", **mig_fields(GpuModelFactory()))
    with translation.override("en"), pytest.raises(ValidationError, match="must be a whole GPU"):
        gpu_model_create(actor="test", **mig_fields(mig, variant="MIG of a MIG"))


def test_a_figure_cited_by_url_keeps_its_detail_as_the_source_description():
    gpu = GpuModelFactory()
    spec = gpu_spec_set(
        actor="test",
        gpu=gpu,
        key=SpecKey.REFERENCE_PRICE_PER_GPU_HOUR,
        value=Decimal("12.29"),
        source="https://example.test/p5",
        source_detail="p5.48xlarge $98.32/h ÷ 8 GPUs",
        as_of=datetime.date(2026, 11, 1),
    )
    assert (spec.unit, spec.source_url, spec.source_text) == (
        "USD/h",
        "https://example.test/p5",
        "p5.48xlarge $98.32/h ÷ 8 GPUs",
    )
