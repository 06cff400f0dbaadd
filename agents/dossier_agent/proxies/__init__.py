"""Proxy models for the memory-fit job: a decoder (dense, GQA, MoE; multi-head or latent attention), an encoder and a
diffusion transformer of the workload's shape with random weights, built on the device at the target precision.

`shape` is plain Python (the job process reads specs with it, without torch); `weights`, `modules`, `optim` and
`build` import torch and run only inside a probe process.
"""
