"""The load generator beside GuideLLM 0.8.1 and AIPerf 0.13.0, same run, same machine (BENCH-METHOD.md).

Mock server (`python -m dossier_agent.mockserver`, no delays, 16 tokens, one SSE chunk per token + usage + [DONE])
pinned to CPU 0; every client pinned to CPU 1. Open loop: constant rate for `--seconds` per level; "kept" = achieved
≥ 95 % of the target and send lag p99 < 50 ms (the method's criterion; the issue's target for our client is
p99 < 10 ms at ≥ 1,000 req/s, reported too). GuideLLM's lag is its `request_dispatch_delay`; AIPerf reports none, so
it is computed from its per-request export (request start − the constant schedule laid from the first credit).
Closed loop at concurrency 32: all three tools plus bare asyncio loops on aiohttp and httpx.

    .venv/bin/python bench/loadgen_peers.py --seconds 20 --reps 2 > bench/out/peers.jsonl

GuideLLM and AIPerf come from bench/.venv-guidellm and bench/.venv-aiperf (never installed by make); a tool whose
venv is missing is reported as such. They need a tokenizer: a small byte-level BPE is trained locally.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from loadgen_common import AGENTS, PYTHON, ROOT, PinnedMock, machine, run_client

BENCH = ROOT / "bench"
GUIDELLM = BENCH / ".venv-guidellm" / "bin"
AIPERF = BENCH / ".venv-aiperf" / "bin"
LAG_KEPT_S = 0.050
TOKENIZER_SCRIPT = r"""
import sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
words = ("the of and to in is was for that on with as by at from it his an are be this which or had not but have one "
         "were they you all her she there their been has would more when will who some time if no can about out also "
         "into only other new first any may these two after most over such where year made word tok").split()
text = [" ".join(words[(i * 7 + j) % len(words)] for j in range(50)) for i in range(400)]
trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<s>", "</s>", "<unk>"],
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train_from_iterator(text, trainer)
fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
fast.chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
fast.save_pretrained(sys.argv[1])
"""


# -- our client, run as a child process --------------------------------------------------------------------------

def dossier_client(url: str, seconds: float, rate: float | None, concurrency: int | None) -> dict:
    sys.path.insert(0, str(AGENTS))
    from dossier_agent.contract.load_spec import LoadSpec
    from dossier_agent.loadgen.runner import run_load

    profile = {"kind": "constant", "rate": rate} if rate else {"kind": "concurrency", "concurrency": concurrency}
    spec = LoadSpec.from_dict({
        "endpoint": {"url": url, "api": "chat", "model": "mock-model"}, "profile": profile, "duration_s": seconds,
        "warmup_s": 1.0, "cooldown_s": 0.0, "min_window_s": 1.0, "output_tokens": 16, "calibrate": False,
        "prompts": {"synthetic": {"input_tokens_mean": 32}}, "send_lag_p99_limit_s": 0.010,
    })
    result = asyncio.run(run_load(spec))
    summary = result.summary
    return {"achieved": summary["throughput"]["requests_per_s"], "lag_p99_s": summary["send_lag_s"]["p99"],
            "lag_p50_s": summary["send_lag_s"]["p50"], "errors": summary["counts"]["errors"],
            "measured": summary["counts"]["measured"], "valid_10ms": summary["valid"],
            "ttft_p50_s": summary["latency_s"]["ttft"]["per_request"]["p50"],
            "records_with_token_times": sum(1 for r in result.records if r["t"])}


# -- peers -------------------------------------------------------------------------------------------------------

def make_tokenizer(folder: Path) -> Path | None:
    python = GUIDELLM / "python" if (GUIDELLM / "python").exists() else AIPERF / "python"
    if not python.exists():
        return None
    if not (folder / "tokenizer.json").exists():
        import subprocess

        subprocess.run([str(python), "-c", TOKENIZER_SCRIPT, str(folder)], check=True, capture_output=True,
                       timeout=300)
    return folder


def guidellm_command(url: str, seconds: float, rate: float | None, concurrency: int | None, out: Path,
                     tokenizer: Path) -> list[str]:
    profile = f"kind=constant,rate={rate}" if rate else f"kind=concurrent,streams={concurrency}"
    return [str(GUIDELLM / "guidellm"), "run", "--backend", f"kind=openai_http,target={url},model=mock-model",
            "--profile", profile, "--constraint", f"kind=max_duration,seconds={seconds}",
            "--data", "kind=synthetic_text,prompt_tokens=32,output_tokens=16",
            "--tokenizer", f"kind=huggingface_auto,model={tokenizer}", "--output", f"kind=json,path={out}",
            "--disable-console-interactive"]


def guidellm_result(out: Path) -> dict:
    data = json.loads(out.read_text())
    bench = data["benchmarks"][0]
    sched = bench["scheduler_metrics"]
    window = sched["measure_end_time"] - sched["measure_start_time"]
    metrics = bench["metrics"]
    successful = metrics["request_totals"]["successful"]
    delay = (metrics.get("request_dispatch_delay") or {}).get("successful") or {}
    lag = delay.get("percentiles") or {}
    return {"achieved": successful / window if window > 0 else None, "lag_p99_s": lag.get("p99"),
            "lag_p50_s": lag.get("p50"), "errors": metrics["request_totals"]["errored"], "measured": successful,
            "incomplete": metrics["request_totals"]["incomplete"]}


def aiperf_command(url: str, seconds: float, rate: float | None, concurrency: int | None, out: Path,
                   tokenizer: Path) -> list[str]:
    load = (["--request-rate", str(rate), "--arrival-pattern", "constant"] if rate
            else ["--concurrency", str(concurrency)])
    return [str(AIPERF / "aiperf"), "profile", "--url", url, "--endpoint-type", "chat", "--streaming",
            "-m", "mock-model", *load, "--benchmark-duration", str(seconds), "--prompt-input-tokens-mean", "32",
            "--output-tokens-mean", "16", "--tokenizer", str(tokenizer), "--use-server-token-count",
            "--artifact-dir", str(out), "--ui", "simple"]


def aiperf_result(out: Path, rate: float | None, seconds: float) -> dict:
    rows = []
    for line in (out / "profile_export.jsonl").read_text().splitlines():
        record = json.loads(line)
        meta = record["metadata"]
        if meta.get("benchmark_phase", "profiling") != "profiling":
            continue
        rows.append((meta["credit_issued_ns"], meta["request_start_ns"], bool(record.get("error"))))
    rows.sort()
    summary = json.loads((out / "profile_export_aiperf.json").read_text())
    duration = (summary.get("benchmark_duration") or {}).get("avg") or seconds
    result = {"achieved": sum(1 for r in rows if not r[2]) / duration, "errors": sum(1 for r in rows if r[2]),
              "measured": len(rows)}
    if rate and rows:
        first = rows[0][0]
        lags = sorted((start - (first + k * 1e9 / rate)) / 1e9 for k, (_, start, _) in enumerate(rows))
        result["lag_p99_s"] = lags[min(len(lags) - 1, int(0.99 * len(lags)))]
        result["lag_p50_s"] = lags[len(lags) // 2]
    return result


def run_level(tool: str, server: PinnedMock, seconds: float, rate: float | None, concurrency: int | None,
              tokenizer: Path | None, scratch: Path) -> dict:
    row = {"tool": tool, "mode": "open" if rate else "closed", "target": rate, "concurrency": concurrency,
           "load_avg_1m_before": round(os.getloadavg()[0], 2)}
    env = dict(os.environ)
    timeout = seconds * 4 + 180
    if tool == "dossier":
        command = [PYTHON, __file__, "--client", "dossier", "--url", server.url, "--seconds", str(seconds)]
        command += ["--rate", str(rate)] if rate else ["--concurrency", str(concurrency)]
    elif tool in ("bare-aiohttp", "bare-httpx"):
        command = [PYTHON, str(BENCH / "loadgen_http_stack.py"), "--client", tool.split("-", 1)[1], "--url",
                   server.url, "--seconds", str(seconds), "--concurrency", str(concurrency)]
    elif tool == "guidellm":
        if tokenizer is None or not (GUIDELLM / "guidellm").exists():
            return row | {"skipped": "bench/.venv-guidellm missing"}
        out = scratch / f"guidellm-{time.monotonic_ns()}.json"
        command = guidellm_command(server.url, seconds, rate, concurrency, out, tokenizer)
        env["HF_HUB_OFFLINE"] = "1"
    elif tool == "aiperf":
        if tokenizer is None or not (AIPERF / "aiperf").exists():
            return row | {"skipped": "bench/.venv-aiperf missing"}
        out = scratch / f"aiperf-{time.monotonic_ns()}"
        command = aiperf_command(server.url, seconds, rate, concurrency, out, tokenizer)
        env.pop("HF_HUB_OFFLINE", None)  # its offline path has a bug (BENCH-METHOD.md)
    else:
        raise ValueError(tool)
    try:
        run = run_client(command, server, timeout_s=timeout, env=env, cwd=str(scratch))
    except Exception as error:  # a tool that hangs or crashes is reported, the run goes on
        return row | {"error": f"{type(error).__name__}: {error}"}
    row["server_cpu_share"] = round(run["server_cpu_share"], 3)
    row["wall_s"] = round(run["wall_s"], 1)
    if run["rc"] != 0:
        return row | {"error": f"exit {run['rc']}: {run['stderr'][-600:]}"}
    try:
        if tool == "dossier":
            row |= json.loads(run["stdout"].strip().splitlines()[-1])
        elif tool.startswith("bare-"):
            row["achieved"] = json.loads(run["stdout"].strip().splitlines()[-1])["rate"]
        elif tool == "guidellm":
            row |= guidellm_result(out)
        else:
            row |= aiperf_result(out, rate, seconds)
            shutil.rmtree(out, ignore_errors=True)
    except Exception as error:
        return row | {"error": f"could not read the result: {type(error).__name__}: {error}"}
    if rate:
        lag = row.get("lag_p99_s")
        row["kept"] = bool(row.get("achieved") and row["achieved"] >= 0.95 * rate and lag is not None
                           and lag < LAG_KEPT_S)
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--dossier-rates", default="1000,1500,2000")
    parser.add_argument("--guidellm-rates", default="100,125,150")
    parser.add_argument("--aiperf-rates", default="250,300,350,400")
    parser.add_argument("--closed", default="dossier,bare-aiohttp,bare-httpx,guidellm,aiperf")
    parser.add_argument("--client")
    parser.add_argument("--url")
    parser.add_argument("--rate", type=float)
    args = parser.parse_args()
    if args.client == "dossier":
        print(json.dumps(dossier_client(args.url, args.seconds, args.rate, None if args.rate else args.concurrency)))
        return
    scratch = Path(tempfile.mkdtemp(prefix="loadgen-peers-"))
    tokenizer = make_tokenizer(BENCH / "out" / "tokenizer")
    rows = []
    plan = [("dossier", float(r)) for r in args.dossier_rates.split(",") if r]
    plan += [("guidellm", float(r)) for r in args.guidellm_rates.split(",") if r]
    plan += [("aiperf", float(r)) for r in args.aiperf_rates.split(",") if r]
    plan += [(tool, None) for tool in args.closed.split(",") if tool]
    with PinnedMock() as server:
        for rep in range(1, args.reps + 1):
            for tool, rate in plan:
                row = run_level(tool, server, args.seconds, rate, None if rate else args.concurrency, tokenizer,
                                scratch) | {"rep": rep}
                rows.append(row)
                print(json.dumps(row), flush=True)
    shutil.rmtree(scratch, ignore_errors=True)
    print(json.dumps({"machine": machine(), "command": " ".join(sys.argv), "seconds": args.seconds,
                      "results": rows}))


if __name__ == "__main__":
    main()
