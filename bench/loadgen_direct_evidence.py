"""Direct throughput evidence of the phase-1 proxy through the offline path: one command, for a
GPU machine — an 8B decoder shape (Llama-3-8B geometry, bf16) at a 4,096-token context, prefill and decode
tokens/s per batch size beside the roofline (bytes moved per decode step ÷ the H200's 4.8 TB/s), run with
`dossier-agent run-job --spool`, the spool packed as one tar file and a short Markdown table written beside it.

    python bench/loadgen_direct_evidence.py --out "$OUT"               # on the GPU machine (auto device)
    .venv/bin/python bench/loadgen_direct_evidence.py --tiny --out /tmp/x   # the same path on a CPU, tiny shape

The table goes to `--out/direct-evidence.md`; copy it (and the tar) to docs/evidence/ from the machine that ran it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL_8B = {"architecture": "dense", "precision": "bf16", "num_layers": 32, "hidden_size": 4096,
            "num_attention_heads": 32, "num_kv_heads": 8, "ffn_size": 14336, "vocab_size": 128256,
            "params": 8_030_261_248}
TINY = {"architecture": "dense", "precision": "fp32", "num_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
        "num_kv_heads": 2, "ffn_size": 128, "vocab_size": 256}
H200_BANDWIDTH_GB_S = 4800  # datasheet: 4.8 TB/s HBM3e


def job_spec(tiny: bool) -> dict:
    direct = {"model": TINY if tiny else MODEL_8B, "context_tokens": 64 if tiny else 4096,
              "batch_sizes": [1, 2] if tiny else [1, 8, 32, 64], "decode_steps": 8 if tiny else 64,
              "warmup_steps": 1 if tiny else 2, "device": "cpu" if tiny else "auto",
              "memory_bandwidth_gb_s": H200_BANDWIDTH_GB_S}
    return {"kind": "throughput", "spec": {"direct": direct}}


def table(result: dict) -> str:
    direct = result["direct"]
    lines = [f"Device: {direct.get('gpu') or direct['device']}, torch {direct['torch']}, timing: {direct['timing']}, "
             f"weights {direct['weight_bytes'] / 1e9:.2f} GB, context {direct['context_tokens']} tokens.", "",
             "| batch | prefill tok/s | TTFT (s) | decode tok/s | TPOT p50 (ms) | roofline tok/s | of roofline |",
             "|---|---|---|---|---|---|---|"]
    for point in direct["points"]:
        if point.get("error"):
            lines.append(f"| {point['batch']} | {point['error']} | | | | | |")
            continue
        roof = point.get("roofline") or {}
        lines.append(
            f"| {point['batch']} | {point['prefill_tokens_per_s']:,.0f} | {point['ttft_s']:.3f} | "
            f"{point['decode_tokens_per_s']:,.0f} | {point['tpot_p50_s'] * 1000:.2f} | "
            f"{roof.get('decode_tokens_per_s_bound', 0):,.0f} | {point.get('decode_fraction_of_roofline', 0):.0%} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    spec_file = args.out / "direct-spec.json"
    spec_file.write_text(json.dumps(job_spec(args.tiny), indent=1))
    spool = args.out / "spool"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "agents"), DOSSIER_AGENT_STATE_DIR=str(args.out / "state"))
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "dossier_agent", "run-job", str(spec_file), "--spool", str(spool)],
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    print(done.stdout.strip(), done.stderr.strip()[-2000:], sep="\n")
    finishes = sorted(spool.rglob("finish.json"), key=lambda p: p.stat().st_mtime)
    archive = args.out / "direct-evidence-spool.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(spool, arcname="spool")
    payload = json.loads(finishes[-1].read_text())["payload"] if finishes else {}
    if not payload.get("result"):
        sys.exit(f"no result in the spool (exit {done.returncode}, error {payload.get('error')})")
    result = payload["result"]
    text = (f"# Direct proxy throughput ({'tiny CPU check' if args.tiny else '8B shape'})\n\n"
            f"Command: `{' '.join(sys.argv)}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"{time.monotonic() - began:.0f} s.\n\n" + table(result))
    (args.out / "direct-evidence.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
