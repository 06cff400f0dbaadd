"""The environment variables Dossier's own code reads, found by scanning config/ and apps/ (not tests).

The compose test and the documentation test compare against this list, so a variable added to the settings
without documentation, or set in docker-compose.yml but read by nothing, fails a test.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCANNED_FOLDERS = ("config", "apps")

# env_str("NAME", …), env_int("NAME", …), env_secret("NAME"), …: the typed helpers of apps/common/env.py.
HELPER_CALL = re.compile(r"\benv_([a-z_]+)\(\s*\"([A-Z][A-Z0-9_]*)\"")
# os.environ.get("NAME"), os.environ["NAME"], os.getenv("NAME").
DIRECT_READ = re.compile(r"\bos\.(?:environ\.get\(|environ\[|getenv\()\s*\"([A-Z][A-Z0-9_]*)\"")
# A module-level constant that names a variable and is then read with os.environ.get(CONSTANT).
NAMED_CONSTANT = re.compile(r"^[A-Z_]*VARIABLE\s*=\s*\"([A-Z][A-Z0-9_]*)\"", re.MULTILINE)


def python_sources() -> list[Path]:
    files = []
    for folder in SCANNED_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = set(path.relative_to(ROOT).parts)
            if "tests" in parts or "migrations" in parts:
                continue
            files.append(path)
    return files


def variables_read_by_dossier() -> set[str]:
    names: set[str] = set()
    for path in python_sources():
        text = path.read_text(encoding="utf-8")
        for helper, name in HELPER_CALL.findall(text):
            names.add(name)
            if helper == "secret":
                names.add(f"{name}_FILE")
        names.update(DIRECT_READ.findall(text))
        names.update(NAMED_CONSTANT.findall(text))
    return names
