"""Recalculate a workbook with a real spreadsheet engine: LibreOffice headless, from Debian's packages."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import openpyxl


def soffice() -> str:
    found = shutil.which("soffice") or shutil.which("libreoffice")
    assert found, "LibreOffice is needed: apt-get install libreoffice-calc-nogui (make test installs it)"
    return found


def recalculate(workbook_path: Path, folder: Path) -> openpyxl.Workbook:
    """Open the workbook in LibreOffice, which computes every formula (openpyxl stores none of their values), save it
    as XLSX again and read the computed values back."""
    out = folder / "recalculated"
    out.mkdir(exist_ok=True)
    profile = folder / "libreoffice-profile"
    result = subprocess.run(
        [soffice(), "--headless", "--norestore", "--nologo", f"-env:UserInstallation={profile.as_uri()}",
         "--convert-to", "xlsx", "--outdir", str(out), str(workbook_path)],
        capture_output=True, text=True, timeout=180, check=False,
    )
    converted = out / workbook_path.name
    assert converted.exists(), f"LibreOffice did not convert the workbook: {result.stdout} {result.stderr}"
    return openpyxl.load_workbook(converted, data_only=True)


def columns(sheet) -> dict[str, str]:
    """Header text → column letter of a sheet's first row."""
    return {cell.value: cell.column_letter for cell in sheet[1] if cell.value}


def row_of(sheet, candidate_id: int) -> int:
    for row in sheet.iter_rows(min_row=2):
        if str(row[0].value) == str(candidate_id):
            return row[0].row
    raise AssertionError(f"candidate {candidate_id} is not in the sheet")
