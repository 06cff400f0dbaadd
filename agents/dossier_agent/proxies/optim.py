"""AdamW with fp32 master weights for 16-bit models (mixed-precision training as the estimator counts it).

Model states per trainable parameter: the 16-bit weight (2 bytes) and its 16-bit gradient (2), and in the optimizer an
fp32 master copy (4) and the two fp32 Adam moments (8) — the 16 bytes of the ZeRO paper. fp32 parameters need no
master copy (their states are the moments: 8 bytes). The states are allocated when the optimizer is made, so a probe
measures them as their own phase. The update is decoupled weight decay Adam (Loshchilov & Hutter 2019), the same
arithmetic as `torch.optim.AdamW`, applied in slices so a large tensor's fp32 gradient copy is never whole.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch

UPDATE_SLICE_ELEMENTS = 1 << 24


class MasterWeightAdamW:
    def __init__(self, parameters: Iterable[torch.nn.Parameter], *, lr: float = 1e-4, betas=(0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01):
        self.parameters = [parameter for parameter in parameters if parameter.requires_grad]
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.steps = 0
        self.state: list[dict[str, torch.Tensor | None]] = []
        for parameter in self.parameters:
            master = None if parameter.dtype == torch.float32 else parameter.detach().float()
            self.state.append({
                "master": master,
                "exp_avg": torch.zeros_like(parameter, dtype=torch.float32),
                "exp_avg_sq": torch.zeros_like(parameter, dtype=torch.float32),
            })

    @property
    def state_bytes(self) -> int:
        return sum(tensor.numel() * tensor.element_size()
                   for state in self.state for tensor in state.values() if tensor is not None)

    @torch.no_grad()
    def step(self) -> None:
        self.steps += 1
        beta1, beta2 = self.betas
        correction1 = 1 - beta1 ** self.steps
        correction2_sqrt = math.sqrt(1 - beta2 ** self.steps)
        step_size = self.lr / correction1
        for parameter, state in zip(self.parameters, self.state, strict=True):
            if parameter.grad is None:
                continue
            weights = parameter.view(-1)
            master = state["master"].view(-1) if state["master"] is not None else weights
            exp_avg, exp_avg_sq = state["exp_avg"].view(-1), state["exp_avg_sq"].view(-1)
            gradient = parameter.grad.view(-1)
            for start in range(0, weights.numel(), UPDATE_SLICE_ELEMENTS):
                part = slice(start, start + UPDATE_SLICE_ELEMENTS)
                g = gradient[part].float()
                master[part].mul_(1 - self.lr * self.weight_decay)
                exp_avg[part].lerp_(g, 1 - beta1)
                exp_avg_sq[part].mul_(beta2).addcmul_(g, g, value=1 - beta2)
                denominator = (exp_avg_sq[part].sqrt() / correction2_sqrt).add_(self.eps)
                master[part].addcdiv_(exp_avg[part], denominator, value=-step_size)
                if state["master"] is not None:
                    weights[part].copy_(master[part])

    def zero_grad(self) -> None:
        for parameter in self.parameters:
            parameter.grad = None
