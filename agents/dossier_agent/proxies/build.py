"""Build a proxy from a model shape, a device and what the probe runs (inference, or training by a method)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from dossier_agent.proxies.modules import BuildOptions, DecoderProxy, DiTProxy, EncoderProxy, add_adapters
from dossier_agent.proxies.shape import (
    LORA_TARGETS,
    SIXTEEN_BIT_OR_WIDER,
    DiffusionGeometry,
    ProxyShape,
    ProxyShapeError,
    compute_precision,
    dit_parameter_breakdown,
)
from dossier_agent.proxies.weights import DTYPES

STORAGE_LABELS = {
    "dense": "{dtype} tensors",
    "fp8": "float8_e4m3fn values + one fp32 scale per matrix (dequantised per layer for the matmul)",
    "int8": "int8 values + one fp32 scale per matrix (dequantised per layer for the matmul)",
    "int4": "packed uint8, two 4-bit values per byte + fp16 scale and 4-bit zero point per group of 128",
    "nf4": "packed uint8, two NF4 codes per byte + absmax per block of 64 ({constants})",
}


@dataclass(frozen=True)
class ProxyPlan:
    """What to build: the layer storage and compute dtype follow the precision and the training method."""

    shape: ProxyShape
    device: str
    workload: str = "inference"  # or "training"
    method: str = "full"  # training: full | lora | qlora
    lora_rank: int = 16
    lora_targets: tuple[str, ...] = LORA_TARGETS
    double_quantisation: bool = True  # QLoRA's NF4 base
    geometry: DiffusionGeometry | None = None
    tokens: int = 256  # diffusion: latent patches per sample (the DiT's positional table)
    seed: int = 0

    @property
    def layer_storage(self) -> str:
        if self.workload == "training" and self.method == "qlora":
            return "nf4"
        return "dense" if self.shape.precision in SIXTEEN_BIT_OR_WIDER else self.shape.precision

    @property
    def compute_dtype_name(self) -> str:
        return compute_precision(self.shape.precision)

    @property
    def trains_base(self) -> bool:
        return self.workload == "training" and self.method == "full"

    @property
    def uses_adapters(self) -> bool:
        return self.workload == "training" and self.method in ("lora", "qlora")

    @property
    def nf4_double_quantisation(self) -> bool:
        if self.workload == "training" and self.method == "qlora":
            return self.double_quantisation
        return self.shape.double_quantisation

    def check(self) -> None:
        if self.trains_base and self.layer_storage != "dense":
            raise ProxyShapeError(
                "training.method",
                f"full training of {self.shape.precision} weights is not a thing; use method lora or qlora",
            )

    def weights_label(self) -> str:
        storage = self.layer_storage
        if storage == "dense":
            return STORAGE_LABELS["dense"].format(dtype=self.compute_dtype_name)
        constants = "uint8 per block + fp32 per 256 blocks" if self.nf4_double_quantisation else "fp32 per block"
        label = STORAGE_LABELS[storage].format(constants=constants)
        if storage in ("nf4", "int4"):
            present = importlib.util.find_spec("bitsandbytes") is not None
            label += "; the proxy's own packed layout (" + (
                "bitsandbytes installed but not used" if present else "bitsandbytes absent") + ")"
        return label + f"; embeddings, head, norms and routers in {self.compute_dtype_name}"

    def labels(self) -> dict[str, Any]:
        return {
            "layer_storage": self.layer_storage,
            "weights_storage": self.weights_label(),
            "compute_dtype": self.compute_dtype_name,
            "packed_4bit": self.layer_storage in ("nf4", "int4"),
        }


def options_for(plan: ProxyPlan, device: torch.device, *, build_adapters: bool = True) -> BuildOptions:
    generator = None
    if device.type != "meta":
        generator = torch.Generator(device=device)
        generator.manual_seed(plan.seed)
    return BuildOptions(
        device=device,
        compute_dtype=DTYPES[plan.compute_dtype_name],
        layer_storage=plan.layer_storage,
        double_quantisation=plan.nf4_double_quantisation,
        train_base=plan.trains_base,
        lora_rank=plan.lora_rank if plan.uses_adapters else None,
        lora_targets=tuple(plan.lora_targets) if plan.uses_adapters else (),
        generator=generator,
        build_adapters=build_adapters,
    )


def build_proxy(plan: ProxyPlan, device: torch.device | str, *, build_adapters: bool = True) -> nn.Module:
    """The proxy, made on `device` (use "meta" to count parameters without memory)."""
    plan.check()
    device = torch.device(device)
    options = options_for(plan, device, build_adapters=build_adapters)
    shape = plan.shape
    if shape.architecture in ("dense", "moe"):
        return DecoderProxy(shape, options)
    if shape.architecture == "encoder":
        return EncoderProxy(shape, options)
    geometry = plan.geometry or DiffusionGeometry()
    fill = dit_parameter_breakdown(shape, geometry, plan.tokens)["conditioning_fill"]
    return DiTProxy(shape, options, geometry, plan.tokens, fill=fill)


def attach_adapters(model: nn.Module, plan: ProxyPlan, device: torch.device | str) -> None:
    add_adapters(model, options_for(plan, torch.device(device)))


def adapter_parameters(model: nn.Module) -> int:
    return sum(parameter.numel() for name, parameter in model.named_parameters() if ".lora." in f".{name}")
