"""Weight storage for the proxies: made directly on the target device, at the target precision, with random values.

Every store holds one weight matrix, or a stack of them (MoE experts: leading dimension E), and gives it back in the
compute dtype with `materialise(index)`. Quantised stores keep the bytes a quantised checkpoint keeps, so the measured
weights match `bytes_per_parameter` of the estimator:

- `fp8`: float8_e4m3fn values and one fp32 scale; `int8`: int8 values and one fp32 scale;
- `int4` (GPTQ/AWQ layout): two 4-bit values per byte, one fp16 scale and one 4-bit zero point per group of 128;
- `nf4` (QLoRA): two 4-bit NormalFloat codes per byte (packed uint8), one fp32 absmax per block of 64, or with double
  quantisation one uint8 absmax per block plus one fp32 constant per 256 blocks. This is the proxy's own packed layout,
  used where bitsandbytes is absent: the result labels it.

A frozen quantised weight goes through `FrozenQuantisedMatmul`, which dequantises one matrix for the forward and again
for the backward (as bitsandbytes does) instead of keeping the dequantised copy alive for the backward.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
INIT_STD = 0.02
INT4_GROUP_SIZE = 128
NF4_BLOCK_SIZE = 64
NF4_DOUBLE_QUANT_BLOCK_SIZE = 256
# The 16 NormalFloat-4 levels (Dettmers et al. 2023, QLoRA, appendix E).
NF4_LEVELS = (
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
    -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
    0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
)
# Random fills of dtypes without normal_ (fp8) go through a 16-bit buffer of at most this many elements.
FILL_CHUNK_ELEMENTS = 1 << 24


def random_tensor(shape: tuple[int, ...], *, device: torch.device, dtype: torch.dtype, std: float = INIT_STD,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """torch.empty on the device, filled in place: no host copy of the weights is ever made."""
    tensor = torch.empty(shape, device=device, dtype=dtype)
    if tensor.device.type == "meta" or tensor.numel() == 0:
        return tensor
    if dtype.is_floating_point and dtype.itemsize >= 2:
        return tensor.normal_(0.0, std, generator=generator)
    if dtype.is_floating_point:  # float8: fill from a bounded 16-bit buffer, chunk by chunk
        flat = tensor.view(-1)
        for start in range(0, flat.numel(), FILL_CHUNK_ELEMENTS):
            stop = min(start + FILL_CHUNK_ELEMENTS, flat.numel())
            buffer = torch.empty(stop - start, device=device, dtype=torch.bfloat16)
            buffer.normal_(0.0, 1.0, generator=generator)
            flat[start:stop].copy_(buffer)
        return tensor
    if dtype == torch.uint8:
        return tensor.random_(0, 256, generator=generator)
    return tensor.random_(-127, 128, generator=generator)  # int8


class WeightStore(nn.Module):
    """Base class: `shape` is (*lead, out, in); `materialise(index)` returns one (out, in) matrix (or the whole
    stack when index is None and there is no leading dimension) in the compute dtype."""

    storage = "dense"

    def __init__(self, shape: tuple[int, ...], compute_dtype: torch.dtype):
        super().__init__()
        self.shape = tuple(shape)
        self.compute_dtype = compute_dtype

    @property
    def logical_numel(self) -> int:
        return math.prod(self.shape)

    @property
    def matrix_shape(self) -> tuple[int, int]:
        return self.shape[-2], self.shape[-1]

    def materialise(self, index: int | None = None) -> torch.Tensor:
        raise TypeError(f"{type(self).__name__} must define materialise()")


class DenseStore(WeightStore):
    def __init__(self, shape: tuple[int, ...], *, device: torch.device, dtype: torch.dtype, trainable: bool,
                 generator: torch.Generator | None = None):
        super().__init__(shape, dtype)
        self.weight = nn.Parameter(random_tensor(shape, device=device, dtype=dtype, generator=generator),
                                   requires_grad=trainable)

    def materialise(self, index: int | None = None) -> torch.Tensor:
        return self.weight if index is None else self.weight[index]


class ScaledStore(WeightStore):
    """fp8 (float8_e4m3fn) or int8 values with one fp32 scale per matrix."""

    def __init__(self, shape: tuple[int, ...], storage: str, *, device: torch.device, compute_dtype: torch.dtype,
                 generator: torch.Generator | None = None):
        super().__init__(shape, compute_dtype)
        self.storage = storage
        dtype = torch.float8_e4m3fn if storage == "fp8" else torch.int8
        self.register_buffer("data", random_tensor(shape, device=device, dtype=dtype, generator=generator))
        lead = shape[:-2]
        self.register_buffer("scale", torch.full((*lead, 1, 1), INIT_STD / (1 if storage == "fp8" else 64),
                                                 device=device, dtype=torch.float32))

    def materialise(self, index: int | None = None) -> torch.Tensor:
        data = self.data if index is None else self.data[index]
        scale = self.scale if index is None else self.scale[index]
        return (data.to(self.compute_dtype) * scale.to(self.compute_dtype)).contiguous()


def _byte_pair_table(levels: torch.Tensor) -> torch.Tensor:
    """(256, 2) table: a byte's high and low nibble → their two levels, so unpacking is one embedding lookup."""
    codes = torch.arange(256, device=levels.device)
    return torch.stack((levels[codes >> 4], levels[codes & 0xF]), dim=1)


class PackedInt4Store(WeightStore):
    """GPTQ/AWQ-style 4-bit: packed values (two per byte), per group of 128 inputs an fp16 scale and a 4-bit zero
    point (zero points packed two per byte as well)."""

    storage = "int4"

    def __init__(self, shape: tuple[int, ...], *, device: torch.device, compute_dtype: torch.dtype,
                 generator: torch.Generator | None = None):
        super().__init__(shape, compute_dtype)
        *lead, rows, columns = shape
        if columns % 2:
            raise ValueError(f"4-bit packing needs an even input size, got {columns}")
        self.group = INT4_GROUP_SIZE if columns % INT4_GROUP_SIZE == 0 else columns
        groups = columns // self.group
        self.register_buffer("packed", random_tensor((*lead, rows, columns // 2), device=device, dtype=torch.uint8,
                                                     generator=generator))
        scales = torch.empty((*lead, rows, groups), device=device, dtype=torch.float16)
        self.register_buffer("scales", scales.fill_(INIT_STD / 8) if scales.device.type != "meta" else scales)
        self.register_buffer("zero_points", random_tensor((*lead, rows, -(-groups // 2)), device=device,
                                                          dtype=torch.uint8, generator=generator))
        levels = torch.arange(16, device=device, dtype=compute_dtype)
        self.register_buffer("table", _byte_pair_table(levels), persistent=False)

    def materialise(self, index: int | None = None) -> torch.Tensor:
        packed = self.packed if index is None else self.packed[index]
        scales = self.scales if index is None else self.scales[index]
        zeros = self.zero_points if index is None else self.zero_points[index]
        columns = self.matrix_shape[1]
        groups = columns // self.group
        values = F.embedding(packed.int(), self.table).reshape(*packed.shape[:-1], groups, self.group)
        zero = F.embedding(zeros.int(), self.table).reshape(*zeros.shape[:-1], -1)[..., :groups]
        values -= zero.unsqueeze(-1)
        values *= scales.to(self.compute_dtype).unsqueeze(-1)
        return values.reshape(*packed.shape[:-1], columns)


class PackedNF4Store(WeightStore):
    """QLoRA NF4: two codes per byte (packed uint8), absmax per block of 64 (fp32, or uint8 + one fp32 per 256
    blocks with double quantisation)."""

    storage = "nf4"

    def __init__(self, shape: tuple[int, ...], *, device: torch.device, compute_dtype: torch.dtype,
                 double_quantisation: bool, generator: torch.Generator | None = None):
        super().__init__(shape, compute_dtype)
        *lead, rows, columns = shape
        per_matrix = rows * columns
        if per_matrix % NF4_BLOCK_SIZE:
            raise ValueError(f"NF4 needs matrices in whole blocks of {NF4_BLOCK_SIZE}, got {rows}×{columns}")
        blocks = per_matrix // NF4_BLOCK_SIZE
        self.double_quantisation = double_quantisation
        self.register_buffer("packed", random_tensor((*lead, per_matrix // 2), device=device, dtype=torch.uint8,
                                                     generator=generator))
        if double_quantisation:
            self.register_buffer("absmax", random_tensor((*lead, blocks), device=device, dtype=torch.uint8,
                                                         generator=generator))
            constants = -(-blocks // NF4_DOUBLE_QUANT_BLOCK_SIZE)
            second = torch.empty((*lead, constants), device=device, dtype=torch.float32)
            self.register_buffer("absmax_scale", second.fill_(INIT_STD / 128) if second.device.type != "meta"
                                 else second)
        else:
            first = torch.empty((*lead, blocks), device=device, dtype=torch.float32)
            self.register_buffer("absmax", first.fill_(INIT_STD * 2) if first.device.type != "meta" else first)
        levels = torch.tensor(NF4_LEVELS, device=device, dtype=compute_dtype)
        self.register_buffer("table", _byte_pair_table(levels), persistent=False)

    def _block_scales(self, index: int | None) -> torch.Tensor:
        absmax = self.absmax if index is None else self.absmax[index]
        if not self.double_quantisation:
            return absmax.to(self.compute_dtype)
        second = self.absmax_scale if index is None else self.absmax_scale[index]
        expanded = second.repeat_interleave(NF4_DOUBLE_QUANT_BLOCK_SIZE, dim=-1)[..., : absmax.shape[-1]]
        return (absmax.to(torch.float32) * expanded).to(self.compute_dtype)

    def materialise(self, index: int | None = None) -> torch.Tensor:
        packed = self.packed if index is None else self.packed[index]
        rows, columns = self.matrix_shape
        values = F.embedding(packed.int(), self.table).reshape(*packed.shape[:-1], -1, NF4_BLOCK_SIZE)
        values *= self._block_scales(index).unsqueeze(-1)
        return values.reshape(*packed.shape[:-1], rows, columns)


class FrozenQuantisedMatmul(torch.autograd.Function):
    """y = x·Wᵀ with W dequantised on the fly; the backward dequantises again (nothing but the store is kept)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, store: WeightStore, index: int | None) -> torch.Tensor:
        ctx.store, ctx.index = store, index
        return F.linear(x, store.materialise(index))

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        weight = ctx.store.materialise(ctx.index)
        return torch.matmul(grad_output, weight), None, None


def apply_weight(x: torch.Tensor, store: WeightStore, index: int | None = None) -> torch.Tensor:
    if isinstance(store, DenseStore):
        return F.linear(x, store.materialise(index))
    return FrozenQuantisedMatmul.apply(x, store, index)


def make_store(shape: tuple[int, ...], *, storage: str, device: torch.device, compute_dtype: torch.dtype,
               trainable: bool, double_quantisation: bool = False,
               generator: torch.Generator | None = None) -> WeightStore:
    if storage == "dense":
        return DenseStore(shape, device=device, dtype=compute_dtype, trainable=trainable, generator=generator)
    if trainable:
        raise ValueError(f"{storage} weights are frozen: train them with LoRA adapters (method lora or qlora)")
    if storage in ("fp8", "int8"):
        return ScaledStore(shape, storage, device=device, compute_dtype=compute_dtype, generator=generator)
    if storage == "int4":
        return PackedInt4Store(shape, device=device, compute_dtype=compute_dtype, generator=generator)
    if storage == "nf4":
        return PackedNF4Store(shape, device=device, compute_dtype=compute_dtype,
                              double_quantisation=double_quantisation, generator=generator)
    raise ValueError(f"unknown weight storage {storage!r}")


def logical_parameters(module: nn.Module) -> int:
    """Parameters as the estimator counts them: quantised stores count their logical elements, not their bytes."""
    quantised = sum(
        store.logical_numel
        for store in module.modules()
        if isinstance(store, WeightStore) and not isinstance(store, DenseStore)
    )
    return quantised + sum(parameter.numel() for parameter in module.parameters())


def storage_bytes(module: nn.Module) -> int:
    """Bytes of every parameter and persistent buffer (what the model occupies by construction)."""
    total = sum(parameter.numel() * parameter.element_size() for parameter in module.parameters())
    for owner in module.modules():
        for name, buffer in owner.named_buffers(recurse=False):
            if name not in owner._non_persistent_buffers_set:
                total += buffer.numel() * buffer.element_size()
    return total
