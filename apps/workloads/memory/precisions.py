"""Number formats (fp32 … nf4): storage bytes per parameter with quantisation constants, the formats a KV cache
may use, and the byte units."""

from __future__ import annotations

from enum import StrEnum
from fractions import Fraction

from apps.workloads.memory.errors import gettext_noop, shape_error

BYTES_PER_GIB = 2**30
BYTES_PER_MIB = 2**20
BYTES_PER_GB = 10**9


class Precision(StrEnum):
    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    INT8 = "int8"
    INT4 = "int4"
    NF4 = "nf4"


PRECISION_ALIASES: dict[str, Precision] = {
    "float32": Precision.FP32,
    "float": Precision.FP32,
    "bfloat16": Precision.BF16,
    "float16": Precision.FP16,
    "half": Precision.FP16,
    "float8": Precision.FP8,
    "float8_e4m3fn": Precision.FP8,
    "float8_e5m2": Precision.FP8,
    "fp8_e4m3": Precision.FP8,
    "fp8_e5m2": Precision.FP8,
}

SIXTEEN_BIT_OR_WIDER = frozenset({Precision.FP32, Precision.BF16, Precision.FP16})
QUANTISED_PRECISIONS = frozenset({Precision.FP8, Precision.INT8, Precision.INT4, Precision.NF4})
KV_CACHE_PRECISIONS = frozenset({Precision.FP32, Precision.BF16, Precision.FP16, Precision.FP8, Precision.INT8})

_STORAGE_BYTES: dict[Precision, Fraction] = {
    Precision.FP32: Fraction(4),
    Precision.BF16: Fraction(2),
    Precision.FP16: Fraction(2),
    Precision.FP8: Fraction(1),
    Precision.INT8: Fraction(1),
    Precision.INT4: Fraction(1, 2),
    Precision.NF4: Fraction(1, 2),
}

# INT4 (GPTQ/AWQ layout): one 16-bit scale and one 4-bit zero point per group of 128 weights.
INT4_GROUP_SIZE = 128
INT4_SCALE_BITS = 16
INT4_ZERO_POINT_BITS = 4
# NF4 (QLoRA, Dettmers et al. 2023): one fp32 absmax constant per block of 64 weights = 32/64 = 0.5 bit/param.
# Double quantisation stores those constants as 8-bit values with one fp32 constant per 256 of them:
# 8/64 + 32/(64·256) = 0.127 bit/param.
NF4_BLOCK_SIZE = 64
NF4_CONSTANT_BITS = 32
NF4_DOUBLE_QUANT_CONSTANT_BITS = 8
NF4_DOUBLE_QUANT_BLOCK_SIZE = 256
# Embeddings, the output head, norms and MoE routers stay in 16-bit when a checkpoint is quantised (GPTQ, AWQ,
# bitsandbytes and vLLM's FP8 all leave them unquantised).
UNQUANTISED_BYTES_PER_PARAMETER = 2


def normalise_precision(value: str | Precision, field_name: str = "precision") -> Precision:
    """Return the Precision for a name such as "bf16", "BF16" or "bfloat16"; ShapeError otherwise."""
    if isinstance(value, Precision):
        return value
    if not isinstance(value, str):
        raise shape_error(
            field_name, gettext_noop("Precision must be a name such as bf16, got %(value)r."), value=value
        )
    key = value.strip().lower()
    if key in PRECISION_ALIASES:
        return PRECISION_ALIASES[key]
    try:
        return Precision(key)
    except ValueError:
        raise shape_error(
            field_name,
            gettext_noop("Unknown precision %(value)r; use one of %(choices)s."),
            value=value,
            choices=", ".join(p.value for p in Precision),
        ) from None


def quantisation_constant_bits(precision: str | Precision, *, double_quantisation: bool = False) -> Fraction:
    """Bits per parameter spent on scale constants (zero for formats without per-group constants)."""
    precision = normalise_precision(precision)
    if precision is Precision.INT4:
        return Fraction(INT4_SCALE_BITS + INT4_ZERO_POINT_BITS, INT4_GROUP_SIZE)
    if precision is Precision.NF4:
        if double_quantisation:
            return Fraction(NF4_DOUBLE_QUANT_CONSTANT_BITS, NF4_BLOCK_SIZE) + Fraction(
                NF4_CONSTANT_BITS, NF4_BLOCK_SIZE * NF4_DOUBLE_QUANT_BLOCK_SIZE
            )
        return Fraction(NF4_CONSTANT_BITS, NF4_BLOCK_SIZE)
    return Fraction(0)


def bytes_per_parameter(precision: str | Precision, *, double_quantisation: bool = False) -> Fraction:
    """Storage bytes per parameter, scale constants included.

    FP32 4, BF16/FP16 2, FP8/INT8 1, INT4/NF4 0.5 + their scale constants."""
    precision = normalise_precision(precision)
    constants = quantisation_constant_bits(precision, double_quantisation=double_quantisation)
    return _STORAGE_BYTES[precision] + constants / 8


def kv_cache_precision(model_precision: Precision, requested: str | Precision | None = None) -> Precision:
    """The format the KV cache is stored in: the one requested (fp32, bf16, fp16, fp8 or int8), else the model's
    dtype when it is 16-bit or wider, else bf16 (quantised weights still cache keys and values in 16-bit)."""
    if requested is None:
        return model_precision if model_precision in SIXTEEN_BIT_OR_WIDER else Precision.BF16
    precision = normalise_precision(requested, "kv_cache_precision")
    if precision not in KV_CACHE_PRECISIONS:
        raise shape_error(
            "kv_cache_precision",
            gettext_noop("A KV cache is stored as %(choices)s, not %(value)s."),
            choices=", ".join(sorted(p.value for p in KV_CACHE_PRECISIONS)),
            value=precision.value,
        )
    return precision
