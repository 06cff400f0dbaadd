"""The CSV reader (a plain module: no database needed)."""

from datetime import date
from decimal import Decimal

import pytest

from apps.catalog.catalog_csv import (
    DEFAULT_CSV_PATH,
    DEFAULT_PRICES_CSV_PATH,
    CatalogFileError,
    Share,
    SourcedValue,
    parse_price_rows,
    parse_rows,
    read_catalog_csv,
    read_prices_csv,
    split_cited,
)

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


def test_the_bundled_file_has_thirty_devices_with_sources():
    """16 whole GPUs of before + L4, A10G, T4 + 10 MIG profiles + 1 CPU host = 30."""
    rows = read_catalog_csv(DEFAULT_CSV_PATH, value_columns=VALUE_COLUMNS)
    assert len(rows) == 30
    kinds = [row.device_kind for row in rows]
    assert (kinds.count("gpu"), kinds.count("mig"), kinds.count("cpu")) == (19, 10, 1)
    # Every GPU's descriptive fields cite a vendor page, except the AWS-only A10G (an instance table).
    gpus = [row for row in rows if row.device_kind == "gpu" and row.name != "NVIDIA A10G"]
    assert all(row.datasheet_url.startswith("https://www.nvidia.com/") for row in gpus)
    migs = [row for row in rows if row.device_kind == "mig"]
    assert all(row.datasheet_url.startswith("https://docs.nvidia.com/datacenter/tesla/mig-user-guide/") for row in migs)
    (cpu,) = [row for row in rows if row.device_kind == "cpu"]
    assert cpu.datasheet_url == "" and cpu.values["memory_gb"].source.startswith("Planning default")
    h200 = next(row for row in rows if (row.name, row.variant) == ("NVIDIA H200", "SXM"))
    assert h200.values["usable_mib"].value == Decimal("143771")
    assert h200.values["usable_mib"].source == "nvidia-smi on an H200 SXM, driver 580.159, 2026-10-27"


PRICE_HEADER = "gpu,variant,amount,currency,source_url,source_text,as_of"


def test_a_url_source_with_text_after_it_is_split_into_the_url_and_its_detail():
    assert split_cited("https://example.test/x nvidia-smi on an X, driver 1") == (
        "https://example.test/x",
        "nvidia-smi on an X, driver 1",
    )
    assert split_cited("nvidia-smi on an X") == ("nvidia-smi on an X", "")
    assert split_cited("https://example.test/x") == ("https://example.test/x", "")


def test_usable_memory_takes_its_own_as_of_date_when_the_file_gives_one():
    header = HEADER.replace("usable_mib_source,", "usable_mib_source,usable_mib_as_of,")
    (row,) = parse_rows(
        [header, "NVIDIA X,SXM,SXM,80,81559,https://example.test/x nvidia-smi,2025-01-23,HBM3,,PCIe,https://v.test/x,"],
        value_columns=VALUE_COLUMNS,
    )
    usable = row.values["usable_mib"]
    assert (usable.source, usable.detail, usable.as_of) == ("https://example.test/x", "nvidia-smi", date(2025, 1, 23))
    assert row.values["memory_gb"].as_of is None  # the load's date applies


MIG_HEADER = (
    HEADER + ",device_kind,parent_gpu,parent_variant,compute_slices,compute_slices_of,memory_slices,memory_slices_of"
)
PARENT_LINE = "NVIDIA X,SXM,SXM,80,,,HBM3,700,PCIe,https://v.test/x,,gpu,,,,,,"


def test_a_mig_profile_reads_its_parent_and_share():
    _parent, mig = parse_rows(
        [
            MIG_HEADER,
            PARENT_LINE,
            "NVIDIA X,SXM MIG 3g.40gb,SXM,40,,,HBM3,,PCIe,https://v.test/mig,,mig,NVIDIA X,SXM,3,7,4,8",
        ],
        value_columns=VALUE_COLUMNS,
    )
    assert (mig.device_kind, mig.parent) == ("mig", ("NVIDIA X", "SXM"))
    assert mig.share == Share(compute_slices=3, compute_slices_of=7, memory_slices=4, memory_slices_of=8)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("NVIDIA X,MIG,SXM,40,,,HBM3,,PCIe,https://v.test/m,,mig,,,3,7,4,8", "needs parent_gpu and parent_variant"),
        ("NVIDIA X,MIG,SXM,40,,,HBM3,,PCIe,https://v.test/m,,mig,NVIDIA X,SXM,8,7,4,8", "more slices than its card"),
        ("NVIDIA X,MIG,SXM,40,,,HBM3,,PCIe,https://v.test/m,,mig,NVIDIA X,SXM,,7,4,8", "column compute_slices"),
        ("NVIDIA X,MIG,SXM,40,,,HBM3,,PCIe,https://v.test/m,,mig,NVIDIA Y,SXM,1,7,1,8", "parent NVIDIA Y SXM is not"),
        ("NVIDIA X,MIG,SXM,40,,,HBM3,,PCIe,https://v.test/m,,tpu,,,,,,", "column device_kind"),
    ],
)
def test_a_mig_profile_without_a_known_parent_or_a_valid_share_is_refused(line, message):
    with pytest.raises(CatalogFileError, match=message):
        parse_rows([MIG_HEADER, PARENT_LINE, line], value_columns=VALUE_COLUMNS)


def test_a_reference_price_keeps_its_source_arithmetic_and_date():
    (price,) = parse_price_rows([PRICE_HEADER, "NVIDIA X,SXM,12.29,USD,https://p.test/x,$98.32/h ÷ 8 GPUs,2026-11-01"])
    assert (price.name, price.variant, price.currency) == ("NVIDIA X", "SXM", "USD")
    assert price.price == SourcedValue(
        value=Decimal("12.29"), source="https://p.test/x", detail="$98.32/h ÷ 8 GPUs", as_of=date(2026, 11, 1)
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("NVIDIA X,SXM,12.29,EUR,https://p.test/x,,2026-11-01", "only USD"),
        ("NVIDIA X,SXM,12.29,USD,,,2026-11-01", "needs a source"),
        ("NVIDIA X,SXM,12.29,USD,https://p.test/x,,", "needs its as-of date"),
        ("NVIDIA X,SXM,-1,USD,https://p.test/x,,2026-11-01", "column amount"),
    ],
)
def test_a_reference_price_without_usd_a_source_a_date_or_a_valid_amount_is_refused(line, message):
    with pytest.raises(CatalogFileError, match=message):
        parse_price_rows([PRICE_HEADER, line])


def test_the_bundled_reference_prices_each_state_their_arithmetic():
    prices = read_prices_csv(DEFAULT_PRICES_CSV_PATH)
    assert prices
    for price in prices:
        assert price.price.source.startswith("https://") and "÷" in price.price.detail and price.price.as_of
