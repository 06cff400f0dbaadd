"""`manage.py load_catalog`: loads the bundled CSV with sources, is idempotent, never overwrites a correction."""

import csv
import datetime
import io
from decimal import Decimal
from fractions import Fraction

import pytest
from django.core.management import CommandError, call_command

from apps.audit.models import ObjectChange
from apps.catalog.catalog_csv import DEFAULT_CSV_PATH, DEFAULT_PRICES_CSV_PATH, split_cited
from apps.catalog.management.commands.load_catalog import SPEC_COLUMNS
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


def price_records():
    with DEFAULT_PRICES_CSV_PATH.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_loads_every_row_of_the_csv_with_its_sources_and_date():
    """30 devices: the 16 whole GPUs of before, L4, A10G and T4, 10 MIG profiles (5 of the A100 80GB SXM, 5 of the
    H100 SXM) and one CPU host. A figure's source is `source_url` with `source_text` as its detail (the text alone when
    there is no URL); usable MiB carries its own cited source and as-of date."""
    run_loader()
    records = csv_records()
    assert len(records) == 30
    assert GpuModel.objects.count() == 30
    expected_figures = 0
    for record in records:
        gpu = GpuModel.objects.get(name=record["gpu"], variant=record["variant"])
        assert gpu.form_factor == record["form_factor"]
        assert gpu.memory_type == record["memory_type"]
        assert gpu.datasheet_url == record["source_url"]
        assert gpu.device_kind == (record["device_kind"] or "gpu")
        for key in SPEC_COLUMNS:
            spec = GpuSpec.objects.filter(gpu=gpu, key=key).first()
            if not record[key]:
                assert spec is None, f"{gpu} {key}: an empty cell must create no figure"
                continue
            expected_figures += 1
            assert spec.value == Decimal(record[key])
            assert spec.unit == SPEC_UNITS[key]
            if key == SpecKey.USABLE_MIB:
                url, detail = split_cited(record["usable_mib_source"])
                expected = (url, detail) if url.startswith("https://") else ("", url)  # H200 SXM: a reading's text
                assert (spec.source_url, spec.source_text) == expected
                expected_as_of = datetime.date.fromisoformat(record["usable_mib_as_of"] or "2026-12-02")
                assert spec.as_of == expected_as_of
            else:
                expected = (
                    (record["source_url"], record["source_text"])
                    if record["source_url"]
                    else ("", record["source_text"])
                )
                assert (spec.source_url, spec.source_text) == expected
                assert spec.as_of == AS_OF
    prices = price_records()
    assert prices, "the bundled file has reference prices"
    for record in prices:
        spec = GpuSpec.objects.get(
            gpu__name=record["gpu"], gpu__variant=record["variant"], key=SpecKey.REFERENCE_PRICE_PER_GPU_HOUR
        )
        assert (spec.value, spec.unit) == (Decimal(record["amount"]), "USD/h")
        assert (spec.source_url, spec.source_text) == (record["source_url"], record["source_text"])
        assert spec.as_of == datetime.date.fromisoformat(record["as_of"])
        expected_figures += 1
    assert GpuSpec.objects.count() == expected_figures


def test_the_h100_sxm_carries_its_sourced_usable_memory_and_a_mig_profile_its_parent_and_share():
    """H100 SXM: 81,559 MiB as Modal's nvidia-smi table reports it (as of the PR, 2025-01-23). Its MIG 3g.40gb is
    3 of 7 compute slices and 4 of 8 memory slices = 80 GB × 4/8 = 40 GB."""
    run_loader()
    h100 = GpuModel.objects.get(name="NVIDIA H100", variant="SXM")
    usable = h100.specs.get(key=SpecKey.USABLE_MIB)
    assert (usable.value, usable.source_url, usable.as_of) == (
        81559,
        "https://github.com/modal-labs/modal-client/pull/2797",
        datetime.date(2025, 1, 23),
    )
    assert "81559MiB" in usable.source_text
    mig = GpuModel.objects.get(name="NVIDIA H100", variant="SXM MIG 3g.40gb")
    assert (mig.device_kind, mig.parent, mig.compute_slices, mig.compute_slices_of) == ("mig", h100, 3, 7)
    assert (mig.memory_slices, mig.memory_slices_of) == (4, 8)
    assert (mig.compute_share, mig.memory_share) == (Fraction(3, 7), Fraction(1, 2))
    assert mig.specs.get(key=SpecKey.MEMORY_GB).value == 40
    assert set(h100.mig_profiles.values_list("variant", flat=True)) == {
        f"SXM MIG {profile}" for profile in ("1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")
    }


def test_the_cpu_device_is_loaded_with_its_stated_host_memory():
    run_loader()
    cpu = GpuModel.objects.get(device_kind="cpu")
    memory = cpu.specs.get(key=SpecKey.MEMORY_GB)
    assert (cpu.parent, memory.value, memory.source_url) == (None, 64, "")
    assert memory.source_text.startswith("Planning default of this catalog, not a vendor figure: 64 GB")


def test_a_price_for_a_device_not_in_the_catalog_stops_the_command(tmp_path):
    prices = tmp_path / "prices.csv"
    prices.write_text(
        "gpu,variant,amount,currency,source_url,source_text,as_of\n"
        "NVIDIA X9,SXM,2.00,USD,https://example.test/x9,$16/h ÷ 8 GPUs,2026-11-01\n",
        encoding="utf-8",
    )
    with pytest.raises(CommandError, match=r"line 2: NVIDIA X9 SXM is not in the catalog"):
        run_loader("--prices", str(prices))
    assert not GpuModel.objects.exists()


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
    assert GpuModel.objects.count() == 30
    assert f"GPU models created: 30; figures created: {len(figures)}; " in first
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
    h100 = GpuModel.objects.get(name="NVIDIA H100", variant="PCIe")  # no usable MiB in the bundled file
    gpu_spec_set(
        actor=admin_user,
        gpu=h100,
        key=SpecKey.TDP_W,
        value=340,
        source="https://example.test/h100-board",
        as_of=datetime.date(2026, 11, 30),
    )
    records = csv_records()
    for record in records:
        if (record["gpu"], record["variant"]) == ("NVIDIA H100", "PCIe"):
            record["usable_mib"] = "81559"
            record["usable_mib_source"] = "nvidia-smi on an H100 PCIe"
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
        "nvidia-smi on an H100 PCIe",
        datetime.date(2026, 12, 3),
    )
    assert h100.specs.get(key=SpecKey.TDP_W).value == 340


def test_a_broken_file_stops_the_command_naming_the_line_and_loads_nothing(tmp_path):
    broken = tmp_path / "broken.csv"
    header = DEFAULT_CSV_PATH.read_text(encoding="utf-8").splitlines()[0]
    broken.write_text(
        header + "\nNVIDIA X1,SXM,SXM,80,,,,HBM3,3.35,989,1979,700,900,PCIe Gen5,https://example.test/x1,\n"
        "NVIDIA X2,SXM,SXM,-80,,,,HBM3,3.35,989,1979,700,900,PCIe Gen5,https://example.test/x2,\n",
        encoding="utf-8",
    )
    with pytest.raises(CommandError, match="line 3, column memory_gb"):
        run_loader("--file", str(broken))
    assert not GpuModel.objects.exists()


def test_a_row_the_models_refuse_rolls_the_whole_load_back(tmp_path):
    broken = tmp_path / "broken.csv"
    header = DEFAULT_CSV_PATH.read_text(encoding="utf-8").splitlines()[0]
    broken.write_text(
        header + "\nNVIDIA X1,SXM,SXM,80,,,,HBM3,3.35,989,1979,700,900,PCIe Gen5,https://example.test/x1,\n"
        "NVIDIA X2,SXM,Cartridge,80,,,,HBM3,3.35,989,1979,700,900,PCIe Gen5,https://example.test/x2,\n",
        encoding="utf-8",
    )
    with pytest.raises(CommandError, match=r"line 3 \(NVIDIA X2 SXM\)"):
        run_loader("--file", str(broken))
    assert not GpuModel.objects.exists()
    assert not ObjectChange.objects.exists()
