"""Ingest benchmark: the metrics summary over 1 M per-request records (target ≤ 15 s).

Builds 1 M records in the load generator's artifact format (16 output tokens each, one chunk per token, a few
errors, Poisson-ish arrivals at 2,000 req/s), writes them as the job's `records.jsonl.gz`, then times:
  1. reading the JSON-lines artifact (gunzip + JSON parse) into columns (`metrics.columns_from_jsonl`);
  2. `metrics.summarize` on those columns (percentiles per request and token-weighted, ITL per token, SLO,
     time slices, histogram/CDF bins);
  3. the same from the numpy-columns artifact (`records.npz`, `metrics.columns_from_npz`) + `summarize`;
each twice.

    .venv/bin/python bench/loadgen_ingest.py --records 1000000
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "agents"))

from dossier_agent.contract import metrics
from loadgen_common import machine


def make_artifact(count: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    sched = np.cumsum(rng.exponential(1 / 2000, count))
    lag = rng.exponential(0.0003, count)
    ttft = 0.05 + rng.gamma(4, 0.01, count)
    itl = 0.01 + rng.exponential(0.002, (count, 16))
    errors = rng.random(count) < 0.01
    lines = []
    for i in range(count):
        send = sched[i] + lag[i]
        if errors[i]:
            lines.append(json.dumps({"i": i, "rid": f"r-{i}", "sched": round(sched[i], 6), "send": round(send, 6),
                                     "first_byte": None, "end": round(send + 0.2, 6), "status": None,
                                     "error": "timeout", "detail": "x", "in_tok": None, "out_tok": None,
                                     "check": None, "usage": "none", "t": []}, separators=(",", ":")))
            continue
        times = send + ttft[i] + np.concatenate([[0.0], np.cumsum(itl[i, 1:])])
        chunks = [round(t, 6) for t in times.tolist()]
        lines.append(json.dumps({"i": i, "rid": f"r-{i}", "sched": round(sched[i], 6), "send": round(send, 6),
                                 "first_byte": round(send + 0.001, 6), "end": round(times[-1] + 0.0002, 6),
                                 "status": 200, "error": None, "detail": None, "in_tok": 32, "out_tok": 16,
                                 "check": "ok", "usage": "server", "t": chunks}, separators=(",", ":")))
    return gzip.compress("\n".join(lines).encode(), compresslevel=1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    began = time.monotonic()
    blob = make_artifact(args.records)
    print(json.dumps({"built_records": args.records, "artifact_bytes": len(blob),
                      "build_s": round(time.monotonic() - began, 1)}), flush=True)
    rows = []
    for rep in range(1, args.reps + 1):
        t0 = time.perf_counter()
        columns = metrics.columns_from_jsonl(gzip.decompress(blob))
        t1 = time.perf_counter()
        summary = metrics.summarize(columns, limits={"ttft_max_s": 0.2, "tpot_max_s": 0.02, "e2e_max_s": 0.5},
                                    slo_target=0.99, target_output_tokens=16)
        t2 = time.perf_counter()
        archive = metrics.columns_to_npz(columns)
        t3 = time.perf_counter()
        again = metrics.columns_from_npz(archive)
        t4 = time.perf_counter()
        metrics.summarize(again, limits={"ttft_max_s": 0.2, "tpot_max_s": 0.02, "e2e_max_s": 0.5},
                          slo_target=0.99, target_output_tokens=16)
        t5 = time.perf_counter()
        row = {"rep": rep, "records": len(columns), "read_jsonl_s": round(t1 - t0, 2),
               "summary_s": round(t2 - t1, 2), "jsonl_total_s": round(t2 - t0, 2), "npz_bytes": len(archive),
               "read_npz_s": round(t4 - t3, 2), "npz_total_s": round(t5 - t3, 2),
               "ttft_p99_s": summary["latency_s"]["ttft"]["per_request"]["p99"],
               "itl_tokens": summary["latency_s"]["itl"]["per_token"]["weight"],
               "summary_json_bytes": len(json.dumps(summary))}
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps({"machine": machine(), "command": " ".join(sys.argv), "results": rows}))


if __name__ == "__main__":
    main()
