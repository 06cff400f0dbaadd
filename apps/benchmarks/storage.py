"""Where artifacts live: the "artifacts" entry of STORAGES (the filesystem by default, object storage by setting)."""

from django.core.files.storage import Storage, storages

ARTIFACT_STORAGE_ALIAS = "artifacts"


def artifact_storage() -> Storage:
    return storages[ARTIFACT_STORAGE_ALIAS]


def artifact_storage_name(sha256: str) -> str:
    """Content-addressed path: the same bytes are stored once, whichever job uploaded them."""
    return f"sha256/{sha256[:2]}/{sha256[2:4]}/{sha256}"
