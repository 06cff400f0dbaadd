"""The CSV reader (a plain module: no database needed)."""

from decimal import Decimal

import pytest

from apps.catalog.catalog_csv import DEFAULT_CSV_PATH, CatalogFileError, parse_rows, read_catalog_csv

VALUE_COLUMNS = ["memory_gb", "usable_mib", "tdp_w"]
HEADER = (
    "gpu,variant,form_factor,memory_gb,usable_mib,usable_mib_source,memory_type,tdp_w,host_interface,source_url,note"
)


def parse(*lines):
    return parse_rows([HEADER, *lines], value_columns=VALUE_COLUMNS)


def test_empty_cells_give_no_value_and_each_value_keeps_its_own_source():
    (row,) = parse(
        'NVIDIA H200,SXM,SXM,141,143771,"nvidia-smi on an H200 SXM",HBM3e,,PCIe Gen5,https://example.test/h200,'
    )
    assert row.name == "NVIDIA H200" and row.variant == "SXM" and row.vendor == "NVIDIA"
    assert set(row.values) == {"memory_gb", "usable_mib"}
    assert row.values["memory_gb"].value == Decimal("141")
    assert row.values["memory_gb"].source == "https://example.test/h200"
    assert row.values["usable_mib"].source == "nvidia-smi on an H200 SXM"


def test_a_usable_memory_value_without_its_own_source_is_refused_with_the_line():
    with pytest.raises(CatalogFileError, match=r"line 2, column usable_mib"):
        parse("NVIDIA H200,SXM,SXM,141,143771,,HBM3e,700,PCIe Gen5,https://example.test/h200,")


def test_a_value_without_a_source_url_is_refused():
    with pytest.raises(CatalogFileError, match=r"line 2, column memory_gb: a value needs a source in source_url"):
        parse("NVIDIA H200,SXM,SXM,141,,,HBM3e,,PCIe Gen5,,")


@pytest.mark.parametrize("bad", ["-1", "lots", "NaN", "Infinity"])
def test_a_negative_or_non_numeric_value_is_refused(bad):
    with pytest.raises(CatalogFileError, match=r"line 2, column tdp_w"):
        parse(f"NVIDIA H200,SXM,SXM,141,,,HBM3e,{bad},PCIe Gen5,https://example.test/h200,")


def test_a_missing_column_is_named():
    with pytest.raises(CatalogFileError, match=r"missing column\(s\): nvlink_gbps"):
        parse_rows([HEADER, ""], value_columns=[*VALUE_COLUMNS, "nvlink_gbps"])


def test_a_gpu_variant_listed_twice_is_refused():
    line = "NVIDIA H200,SXM,SXM,141,,,HBM3e,700,PCIe Gen5,https://example.test/h200,"
    with pytest.raises(CatalogFileError, match=r"line 3: NVIDIA H200 SXM appears twice"):
        parse(line, line)


def test_the_bundled_file_has_sixteen_gpu_variants_with_sources():
    rows = read_catalog_csv(DEFAULT_CSV_PATH, value_columns=VALUE_COLUMNS)
    assert len(rows) == 16
    assert all(row.datasheet_url.startswith("https://www.nvidia.com/") for row in rows)
    h200 = next(row for row in rows if (row.name, row.variant) == ("NVIDIA H200", "SXM"))
    assert h200.values["usable_mib"].value == Decimal("143771")
    assert h200.values["usable_mib"].source == "nvidia-smi on an H200 SXM, driver 580.159, 2026-10-27"
