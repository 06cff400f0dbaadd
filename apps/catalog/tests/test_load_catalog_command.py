"""`manage.py load_catalog`: loads the bundled CSV with sources, is idempotent, never overwrites a correction."""

import csv
import datetime
import io
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from apps.audit.models import ObjectChange
from apps.catalog.catalog_csv import DEFAULT_CSV_PATH
from apps.catalog.models import SPEC_UNITS, GpuModel, GpuSpec, SpecKey
from apps.catalog.services import gpu_spec_set

pytestmark = pytest.mark.django_db
AS_OF = datetime.date(2026, 12, 2)


def run_loader(*args) -> str:
    out = io.StringIO()
    call_command("load_catalog", *args, stdout=out)
    return out.getvalue()


def csv_records():
    with DEFAULT_CSV_PATH.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def all_figures():
    return sorted(
        GpuSpec.objects.values_list("gpu__name", "gpu__variant", "key", "value", "source_url", "source_text", "as_of")
    )


def test_loads_every_row_of_the_csv_with_its_sources_and_date():
    run_loader()
    records = csv_records()
    assert len(records) == 16
    assert GpuModel.objects.count() == 16
    expected_figures = 0
    for record in records:
        gpu = GpuModel.objects.get(name=record["gpu"], variant=record["variant"])
        assert gpu.form_factor == record["form_factor"]
        assert gpu.memory_type == record["memory_type"]
        assert gpu.datasheet_url == record["source_url"]
        for key in SpecKey.values:
            spec = GpuSpec.objects.filter(gpu=gpu, key=key).first()
            if not record[key]:
                assert spec is None, f"{gpu} {key}: an empty cell must create no figure"
                continue
            expected_figures += 1
            assert spec.value == Decimal(record[key])
            assert spec.unit == SPEC_UNITS[key]
            assert spec.as_of == AS_OF
            if key == SpecKey.USABLE_MIB:
                assert (spec.source_text, spec.source_url) == (record["usable_mib_source"], "")
            else:
                assert (spec.source_url, spec.source_text) == (record["source_url"], "")
    assert GpuSpec.objects.count() == expected_figures


def test_the_h200_sxm_carries_the_usable_memory_its_driver_reported():
    run_loader()
    spec = GpuSpec.objects.get(gpu__name="NVIDIA H200", gpu__variant="SXM", key=SpecKey.USABLE_MIB)
    assert spec.value == 143771
    assert spec.source_text == "nvidia-smi on an H200 SXM, driver 580.159, 2026-10-27"


def test_running_it_twice_changes_nothing():
    first = run_loader()
    figures, entries = all_figures(), ObjectChange.objects.count()
    second = run_loader()
    assert all_figures() == figures
    assert ObjectChange.objects.count() == entries
    assert GpuModel.objects.count() == 16
    assert f"GPU models created: 16; figures created: {len(figures)}; " in first
    assert (
        f"GPU models created: 0; figures created: 0; figures already recorded, left as they are: {len(figures)}."
        in (second)
    )


def test_every_loaded_value_is_in_the_audit_log_as_created_by_the_loader():
    run_loader()
    created = ObjectChange.objects.filter(action=ObjectChange.Action.CREATE, actor_label="load_catalog")
    assert created.count() == GpuModel.objects.count() + GpuSpec.objects.count()


def test_an_admin_correction_survives_a_later_load(admin_user):
    run_loader()
    h200 = GpuModel.objects.get(name="NVIDIA H200", variant="SXM")
    gpu_spec_set(
        actor=admin_user,
        gpu=h200,
        key=SpecKey.MEMORY_GB,
        value=Decimal("143"),
        source="https://example.test/h200-errata",
        as_of=datetime.date(2026, 12, 1),
    )
    run_loader()
    spec = h200.specs.get(key=SpecKey.MEMORY_GB)
    assert (spec.value, spec.source_url, spec.as_of) == (
        Decimal("143"),
        "https://example.test/h200-errata",
        datetime.date(2026, 12, 1),
    )
    assert spec.entered_by == admin_user


def test_a_value_added_to_the_file_later_is_created_and_the_rest_left_alone(tmp_path, admin_user):
    run_loader()
    h100 = GpuModel.objects.get(name="NVIDIA H100", variant="SXM")
    gpu_spec_set(
        actor=admin_user,
        gpu=h100,
        key=SpecKey.TDP_W,
        value=690,
        source="https://example.test/h100-board",
        as_of=datetime.date(2026, 11, 30),
    )
    records = csv_records()
    for record in records:
        if (record["gpu"], record["variant"]) == ("NVIDIA H100", "SXM"):
            record["usable_mib"] = "81559"
            record["usable_mib_source"] = "nvidia-smi on an H100 SXM"
    later = tmp_path / "later.csv"
    with later.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)

    output = run_loader("--file", str(later), "--as-of", "2026-12-03")

    assert "GPU models created: 0; figures created: 1;" in output
    usable = h100.specs.get(key=SpecKey.USABLE_MIB)
    assert (usable.value, usable.source_text, usable.as_of) == (
        81559,
        "nvidia-smi on an H100 SXM",
        datetime.date(2026, 12, 3),
    )
    assert h100.specs.get(key=SpecKey.TDP_W).value == 690


def test_a_broken_file_stops_the_command_naming_the_line_and_loads_nothing(tmp_path):
    broken = tmp_path / "broken.csv"
    header = DEFAULT_CSV_PATH.read_text(encoding="utf-8").splitlines()[0]
    broken.write_text(
        header + "\nNVIDIA X1,SXM,SXM,80,,,HBM3,3.35,989,1979,700,900,PCIe Gen5,https://example.test/x1,\n"
        "NVIDIA X2,SXM,SXM,-80,,,HBM3,3.35,989,1979,700,900,PCIe Gen5,https://example.test/x2,\n",
        encoding="utf-8",
    )
    with pytest.raises(CommandError, match="line 3, column memory_gb"):
        run_loader("--file", str(broken))
    assert not GpuModel.objects.exists()


def test_a_row_the_models_refuse_rolls_the_whole_load_back(tmp_path):
    broken = tmp_path / "broken.csv"
    header = DEFAULT_CSV_PATH.read_text(encoding="utf-8").splitlines()[0]
    broken.write_text(
        header + "\nNVIDIA X1,SXM,SXM,80,,,HBM3,3.35,989,1979,700,900,PCIe Gen5,https://example.test/x1,\n"
        "NVIDIA X2,SXM,Cartridge,80,,,HBM3,3.35,989,1979,700,900,PCIe Gen5,https://example.test/x2,\n",
        encoding="utf-8",
    )
    with pytest.raises(CommandError, match=r"line 3 \(NVIDIA X2 SXM\)"):
        run_loader("--file", str(broken))
    assert not GpuModel.objects.exists()
    assert not ObjectChange.objects.exists()
