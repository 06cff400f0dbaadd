"""Writes to the GPU catalog. Every change is audited, and no figure changes without a source and an as-of date."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from apps.audit.models import ObjectChange
from apps.audit.services import model_create, model_snapshot, model_update, record_change
from apps.catalog.catalog_csv import CatalogFileError, CatalogRow
from apps.catalog.models import SPEC_UNITS, GpuModel, GpuSpec, SpecKey

#: The fields of a GPU model an admin may change (everything but its figures, which go through gpu_spec_set).
GPU_MODEL_EDITABLE_FIELDS = (
    "vendor",
    "name",
    "variant",
    "form_factor",
    "memory_type",
    "host_interface",
    "datasheet_url",
    "note",
    "device_kind",
    "parent",
    "compute_slices",
    "compute_slices_of",
    "memory_slices",
    "memory_slices_of",
)
_VALUE_PLACES = Decimal("0.0001")  # GpuSpec.value has four decimal places
SOURCE_REQUIRED = _("A new value needs a source: the web address of the datasheet or a description of the reading.")
AS_OF_REQUIRED = _("A new value needs the date its source gives it as of.")


def _latest_date_on_earth() -> datetime.date:
    # "Not in the future" must hold in every time zone: UTC+14 is the first to reach a date.
    return (timezone.now() + datetime.timedelta(hours=14)).date()


def split_source(source: str) -> tuple[str, str]:
    """(source_url, source_text): a web address goes to the URL, anything else is a description."""
    source = (source or "").strip()
    if not source:
        raise ValidationError({"source": SOURCE_REQUIRED})
    if source.lower().startswith(("http://", "https://")):
        try:
            URLValidator()(source)
        except ValidationError:
            raise ValidationError(
                {"source": _("This source looks like a web address but is not a valid one.")}
            ) from None
        return source, ""
    return "", source


def _as_decimal(value) -> Decimal:
    try:
        number = value if isinstance(value, Decimal) else Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise ValidationError({"value": _("Enter a number.")}) from None
    if not number.is_finite():
        raise ValidationError({"value": _("Enter a number.")})
    return number


def check_spec_input(*, key: str, value, source: str, as_of) -> tuple[SpecKey, Decimal, str, str]:
    """(key, value, source_url, source_text), or a ValidationError naming key, value, source and as_of.

    Forms call it too, so that what they accept is exactly what gpu_spec_set accepts.
    """
    errors: dict[str, list] = {}
    try:
        spec_key = SpecKey(key)
    except ValueError:
        spec_key = None
        errors["key"] = [_("Unknown figure.")]
    try:
        number = _as_decimal(value)
    except ValidationError as error:
        number = None
        errors.update(error.message_dict)
    try:
        source_url, source_text = split_source(source)
    except ValidationError as error:
        source_url = source_text = ""
        errors.update(error.message_dict)
    if as_of is None:
        errors["as_of"] = [AS_OF_REQUIRED]
    elif not isinstance(as_of, datetime.date) or isinstance(as_of, datetime.datetime):
        errors["as_of"] = [_("Enter a date.")]
    elif as_of > _latest_date_on_earth():
        errors["as_of"] = [_("The as-of date cannot be in the future.")]
    if errors:
        raise ValidationError(errors)
    return spec_key, number, source_url, source_text


@transaction.atomic
def gpu_spec_set(
    *,
    actor,
    gpu: GpuModel,
    key: str,
    value: Decimal | int | str,
    source: str,
    as_of: datetime.date,
    source_detail: str = "",
) -> GpuSpec:
    """Record a figure of a GPU model (create it, or correct it), keeping the old value in the audit log.

    `source` is a URL or a description of where the value comes from; both `source` and `as_of` are required.
    `source_detail` says what a URL shows or how the value was derived from it (e.g. "$98.32/h ÷ 8 GPUs"); it is
    stored as the source description beside the URL.
    `actor` is the user making the change, or a label such as "load_catalog" for a command.
    Setting exactly what is already recorded changes nothing and writes no audit entry.
    """
    spec_key, number, source_url, source_text = check_spec_input(key=key, value=value, source=source, as_of=as_of)
    source_detail = (source_detail or "").strip()
    if source_detail:
        source_text = source_detail if source_url else f"{source_text} — {source_detail}"

    spec = GpuSpec.objects.select_for_update().filter(gpu=gpu, key=spec_key).first()
    before = model_snapshot(spec) if spec is not None else None
    if spec is None:
        spec = GpuSpec(gpu=gpu, key=spec_key, unit=SPEC_UNITS[spec_key])
    elif (spec.value, spec.source_url, spec.source_text, spec.as_of) == (number, source_url, source_text, as_of):
        return spec

    spec.value = number
    spec.source_url = source_url
    spec.source_text = source_text
    spec.as_of = as_of
    spec.entered_by = actor if getattr(actor, "is_authenticated", False) else None
    spec.entered_at = timezone.now()
    try:
        spec.full_clean()
    except ValidationError as error:
        # The caller passed one "source": report the model's two source fields under that name.
        raise ValidationError(
            {
                ("source" if field in ("source_url", "source_text") else field): messages
                for field, messages in error.message_dict.items()
            }
        ) from None
    spec.value = spec.value.quantize(_VALUE_PLACES)  # the stored form, so before/after snapshots compare alike
    spec.save()
    record_change(
        actor=actor,
        instance=spec,
        action=ObjectChange.Action.UPDATE if before is not None else ObjectChange.Action.CREATE,
        before=before,
        after=model_snapshot(spec),
    )
    return spec


@transaction.atomic
def gpu_model_create(*, actor, **fields) -> GpuModel:
    unknown = set(fields) - set(GPU_MODEL_EDITABLE_FIELDS)
    if unknown:
        raise TypeError(f"gpu_model_create() got unexpected fields: {', '.join(sorted(unknown))}")
    return model_create(instance=GpuModel(**fields), actor=actor)


@transaction.atomic
def gpu_model_update(*, actor, gpu: GpuModel, **changes) -> GpuModel:
    """Change the descriptive fields of a GPU model (not its figures), audited with before/after."""
    gpu = GpuModel.objects.select_for_update().get(pk=gpu.pk)
    gpu, _changed = model_update(instance=gpu, actor=actor, data=changes, fields=GPU_MODEL_EDITABLE_FIELDS)
    return gpu


@dataclass(frozen=True)
class CatalogLoadResult:
    gpus_created: int
    specs_created: int
    specs_kept: int  # already recorded (perhaps corrected by an admin): left exactly as they are


@transaction.atomic
def catalog_load(*, rows: Sequence[CatalogRow], as_of: datetime.date, actor="load_catalog") -> CatalogLoadResult:
    """Create the devices and figures of `rows` that are missing. Never changes what is already recorded.

    Running it twice changes nothing; an admin's correction survives every later load. A figure takes its own as-of
    date when the file gives one, else `as_of`. Whole GPUs are created before the MIG profiles that name them.
    """
    existing = {(gpu.name, gpu.variant): gpu for gpu in GpuModel.objects.prefetch_related("specs")}
    gpus_created = specs_created = specs_kept = 0
    for row in sorted(rows, key=lambda row: row.parent is not None):
        try:
            created_gpu, created, kept = _load_row(row, existing=existing, as_of=as_of, actor=actor)
        except ValidationError as error:
            raise CatalogFileError(f"line {row.line} ({row.name} {row.variant}): {'; '.join(error.messages)}") from None
        gpus_created += created_gpu
        specs_created += created
        specs_kept += kept
    return CatalogLoadResult(gpus_created=gpus_created, specs_created=specs_created, specs_kept=specs_kept)


def _load_row(row: CatalogRow, *, existing: dict, as_of: datetime.date, actor) -> tuple[int, int, int]:
    """(GPU models created, figures created, figures kept) for one CSV row."""
    gpu = existing.get((row.name, row.variant))
    gpus_created = 0
    if gpu is None:
        device_fields = {"device_kind": row.device_kind}
        if row.parent is not None:
            parent = existing.get(row.parent)
            if parent is None:
                raise ValidationError({"parent": f"{' '.join(row.parent)} is not in the catalog"})
            device_fields.update(
                parent=parent,
                compute_slices=row.share.compute_slices,
                compute_slices_of=row.share.compute_slices_of,
                memory_slices=row.share.memory_slices,
                memory_slices_of=row.share.memory_slices_of,
            )
        gpu = gpu_model_create(
            actor=actor,
            **device_fields,
            vendor=row.vendor,
            name=row.name,
            variant=row.variant,
            form_factor=row.form_factor,
            memory_type=row.memory_type,
            host_interface=row.host_interface,
            datasheet_url=row.datasheet_url,
            note=row.note,
        )
        existing[(row.name, row.variant)] = gpu
        recorded_keys: set[str] = set()
        gpus_created = 1
    else:
        recorded_keys = {spec.key for spec in gpu.specs.all()}
    missing = {key: sourced for key, sourced in row.values.items() if key not in recorded_keys}
    for key, sourced in missing.items():
        gpu_spec_set(
            actor=actor,
            gpu=gpu,
            key=key,
            value=sourced.value,
            source=sourced.source,
            source_detail=sourced.detail,
            as_of=sourced.as_of or as_of,
        )
    return gpus_created, len(missing), len(row.values) - len(missing)
