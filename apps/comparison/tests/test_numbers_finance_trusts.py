"""Numbers a finance reader trusts: a comparison whose exact figures carry decimal artefacts (a zero waste of a
30-decimal GPU cost is 0E-29; a productive capacity of 1,000 computed through a division is 999.99…98; an idle
capacity of 8,000 is 8000.000…000) shows none of them in the API, the CSV, the page or the workbook, where the
formula cells also store their computed values. The rule is apps/common/money.py's."""

import csv
import io
import re
from decimal import Decimal

import openpyxl
import pytest
from django.urls import reverse

from apps.common import money
from apps.common.decimals import significant
from apps.common.money import round_to_minor_unit
from apps.comparison.exports import LINES_SHEET, TABLE_SHEET
from apps.comparison.selectors import comparison_for
from apps.comparison.tests.builders import workload
from apps.comparison.tests.spreadsheet import columns, recalculate, row_of
from apps.comparison.tests.test_training_comparison import TRAINING_WORKLOAD, _cluster
from apps.comparison.tests.test_xlsx_recalculation import _other_models

pytestmark = pytest.mark.django_db

#: An exponent (0E-29, 2.00000E+7) or a quotient's noise (twenty zeros or nines in a row after the point).
ARTEFACT = re.compile(r"\dE[+-]?\d|\.\d*(0{20}|9{20})")


@pytest.fixture
def artefacts(team, platform_user):
    summary, spot, node, bought = _other_models(team, platform_user)
    comparison = comparison_for(platform_user, summary)
    assert comparison.problems == []
    rows = {result.candidate.pk: result.row for result in comparison.rows}
    # What the cost model computes, exactly, for these inputs: the artefacts the exports must not show.
    exact = [str(getattr(row, name)) for row in rows.values()
             for name in ("failure_waste", "productive_capacity", "idle_capacity", "gpu_cost", "retry_waste")]
    assert any(ARTEFACT.search(text) for text in exact), exact
    assert any(re.fullmatch(r"0E-\d+", text) for text in exact), exact  # a zero with an exponent
    return summary, {"spot": spot, "node": node, "bought": bought}, rows


def _strings(data):
    if isinstance(data, dict):
        for value in data.values():
            yield from _strings(value)
    elif isinstance(data, list):
        for value in data:
            yield from _strings(value)
    elif isinstance(data, str):
        yield data


def _ids(data, key="candidate_id"):
    if isinstance(data, dict):
        for name, value in data.items():
            if name == key:
                yield value
            yield from _ids(value, key)
    elif isinstance(data, list):
        for value in data:
            yield from _ids(value, key)


def test_the_api_writes_exact_figures_without_artefacts_and_shows_them_rounded(client, platform_user, artefacts):
    summary, candidates, _rows = artefacts
    client.force_login(platform_user)
    data = client.get(reverse("comparison-api:comparison", args=[summary.pk])).json()
    assert [text for text in _strings(data) if ARTEFACT.search(text)] == []
    by_id = {item["candidate_id"]: item["row"] for item in data["candidates"]}
    bought, node = by_id[candidates["bought"].pk], by_id[candidates["node"].pk]
    assert (bought["failure_waste"], bought["failure_loss"]) == ("0", "0")
    assert (node["productive_capacity"], node["idle_capacity"]) == ("1000", "7990")
    # The exact figure is still exact to 30 significant digits: nothing a reader can check is lost.
    row = _rows[candidates["bought"].pk]
    assert abs(Decimal(bought["total_cost"]) - row.total_cost) <= row.total_cost * Decimal("1e-29")
    shown = bought["display"]
    assert (shown["failure_waste"], shown["total_cost"], shown["gpu_cost"]) == (
        "0.00", str(round_to_minor_unit(row.total_cost, "USD")), str(round_to_minor_unit(row.gpu_cost, "USD")))
    assert shown["effective_unit_cost"] == str(significant(row.effective_unit_cost, 6))
    assert shown["gpu_cost_parts"]["amortised_capex"] == "7777.78"
    assert node["display"]["productive_capacity"] == "1000.00" and node["display"]["idle_capacity"] == "7990.00"
    for item in data["candidates"]:
        assert [note["text"] for note in item["row"]["notes"] if ARTEFACT.search(note["text"])] == []


def test_the_api_gives_every_candidate_id_as_an_int(client, platform_user, artefacts):
    summary, candidates, _rows = artefacts
    client.force_login(platform_user)
    data = client.get(reverse("comparison-api:comparison", args=[summary.pk]),
                      {"chosen": candidates["spot"].pk}).json()
    ids = list(_ids(data))
    assert ids and all(value is None or isinstance(value, int) for value in ids), ids
    assert {item["row"]["candidate_id"] for item in data["candidates"]} == {c.pk for c in candidates.values()}
    assert data["chosen"] == candidates["spot"].pk
    for key in ("cheapest_per_accepted_output", "lowest_hourly_price"):
        assert isinstance(data[key], int)


def test_the_csv_writes_exact_figures_without_artefacts(client, platform_user, artefacts):
    summary, candidates, rows = artefacts
    client.force_login(platform_user)
    text = client.get(reverse("comparison:comparison-csv", args=[summary.pk])).content.decode()
    assert ARTEFACT.search(text) is None, ARTEFACT.search(text)
    lines = {int(line["candidate_id"]): line for line in csv.DictReader(io.StringIO(text))}
    bought, node = lines[candidates["bought"].pk], lines[candidates["node"].pk]
    assert (bought["failure_waste"], bought["retry_waste"]) == ("0", "0")
    assert (node["productive_capacity"], node["idle_capacity"]) == ("1000", "7990")
    assert Decimal(bought["effective_unit_cost"]) == Decimal(money.exact(rows[candidates["bought"].pk]
                                                                         .effective_unit_cost))


def test_the_page_shows_no_artefact(client, platform_user, artefacts):
    summary, candidates, _rows = artefacts
    client.force_login(platform_user)
    page = client.get(reverse("comparison:comparison", args=[summary.pk])).content.decode()
    assert ARTEFACT.search(page) is None, ARTEFACT.search(page)
    bought = page.split(f'id="candidate-{candidates["bought"].pk}"')[1].split("</tr>")[0]
    assert 'data-sort-value="0"><span translate="no">0.00</span>' in bought  # the failure waste
    bought_row = _rows[candidates["bought"].pk]
    assert f"{round_to_minor_unit(bought_row.gpu_cost, 'USD'):,}" in bought
    node = page.split(f'id="candidate-{candidates["node"].pk}"')[1].split("</tr>")[0]
    idle = round_to_minor_unit(_rows[candidates["node"].pk].idle_capacity, "USD")
    assert f"of which idle <span translate=\"no\">{idle:,}</span>" in node


def _download(client, user, summary, tmp_path):
    client.force_login(user)
    path = tmp_path / "comparison.xlsx"
    path.write_bytes(client.get(reverse("comparison:comparison-xlsx", args=[summary.pk])).content)
    return path


def test_the_workbook_keeps_its_formulas_and_stores_their_values(client, platform_user, artefacts, tmp_path):
    summary, candidates, rows = artefacts
    path = _download(client, platform_user, summary, tmp_path)
    formulas, values = openpyxl.load_workbook(path), openpyxl.load_workbook(path, data_only=True)
    for sheet in (TABLE_SHEET, LINES_SHEET):
        for line in formulas[sheet].iter_rows(min_row=2):
            for cell in line:
                if isinstance(cell.value, str) and cell.value.startswith("="):
                    cached = values[sheet][cell.coordinate].value
                    assert isinstance(cached, int | float), (sheet, cell.coordinate, cell.value, cached)
    table, header = values[TABLE_SHEET], columns(values[TABLE_SHEET])
    for name, candidate in candidates.items():
        row, number = rows[candidate.pk], row_of(table, candidate.pk)

        def cached(heading, number=number):
            return Decimal(repr(table[f"{header[heading]}{number}"].value))

        assert str(formulas[TABLE_SHEET][f"{header['total cost (reporting currency)']}{number}"].value).startswith("=")
        assert money.round_to_minor_unit(cached("total cost (reporting currency)"), "USD") == \
            money.round_to_minor_unit(row.total_cost, "USD"), name
        assert money.round_to_minor_unit(cached("GPU cost"), "USD") == money.round_to_minor_unit(row.gpu_cost, "USD")
        assert money.round_to_minor_unit(cached("idle capacity"), "USD") == \
            money.round_to_minor_unit(row.idle_capacity, "USD")
        assert money.round_unit_price(cached("effective unit cost")) == money.round_unit_price(row.effective_unit_cost)
        assert (cached("GPUs"), cached("nodes")) == (row.gpus, row.nodes)
    assert cached("failure waste", row_of(table, candidates["bought"].pk)) == 0


def test_the_stored_values_are_what_a_spreadsheet_computes(client, platform_user, artefacts, tmp_path):
    summary, _candidates, _rows = artefacts
    path = _download(client, platform_user, summary, tmp_path)
    formulas, stored = openpyxl.load_workbook(path), openpyxl.load_workbook(path, data_only=True)
    computed = recalculate(path, tmp_path)
    for sheet in (TABLE_SHEET, LINES_SHEET):
        for line in formulas[sheet].iter_rows(min_row=2):
            for cell in line:
                if isinstance(cell.value, str) and cell.value.startswith("="):
                    ours = Decimal(repr(stored[sheet][cell.coordinate].value))
                    theirs = Decimal(repr(computed[sheet][cell.coordinate].value))
                    assert abs(ours - theirs) <= abs(theirs) * Decimal("1e-9"), (sheet, cell.coordinate, ours, theirs)


def test_the_training_workbook_stores_the_cost_per_run(client, team, platform_user, tmp_path):
    summary = workload(team, **TRAINING_WORKLOAD)
    # 50e9 tokens at 70,000 tokens/s: 198.41269841… compute hours, a quotient with no exact decimal form.
    a = _cluster(team, platform_user, summary, label="A 16× H100", price="3.00", gpus_per_node=8, node_count=2,
                 throughput="70000", commercial_model="on_demand")
    b = _cluster(team, platform_user, summary, label="B 8× H100", price="2.60", gpus_per_node=8, node_count=1,
                 throughput="28000", commercial_model="on_demand")
    path = _download(client, platform_user, summary, tmp_path)
    formulas, values = openpyxl.load_workbook(path)[TABLE_SHEET], openpyxl.load_workbook(path, data_only=True)
    table, header = values[TABLE_SHEET], columns(values[TABLE_SHEET])
    rows = {result.candidate.pk: result.training_row for result in
            comparison_for(platform_user, summary).training_rows}
    for candidate in (a, b):
        number = row_of(table, candidate.pk)
        cell = f"{header['cost per completed run']}{number}"
        assert str(formulas[cell].value).startswith("=")
        assert money.round_to_minor_unit(Decimal(repr(table[cell].value)), "USD") == \
            money.round_to_minor_unit(rows[candidate.pk].cost_per_completed_run, "USD")
        assert table[f"{header['checkpoints']}{number}"].value == rows[candidate.pk].checkpoints
