"""Direct throughput of the proxy (no serving stack), on the CPU with a tiny decoder; the spec checks need no torch."""

import json

import pytest
from dossier_agent.loadgen import direct

TINY = {"architecture": "dense", "precision": "fp32", "num_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
        "num_kv_heads": 2, "ffn_size": 128, "vocab_size": 256}


@pytest.mark.parametrize("bad", [{"batch_sizes": []}, {"batch_sizes": [0]}, {"decode_steps": 64},
                                 {"workload": "serving"}, {"device": "tpu"},
                                 {"model": dict(TINY, architecture="encoder")}, {"model": {"architecture": "x"}}])
def test_direct_spec_is_checked_before_torch(bad):
    with pytest.raises(direct.DirectSpecError):
        direct.parse_direct({"model": TINY, "context_tokens": 64} | bad)


def test_roofline_is_bandwidth_over_bytes_per_step():
    bound = direct.roofline(None, {"memory_bandwidth_gb_s": 4800}, 8, weight_bytes=16 * 10**9,
                            kv_bytes_per_request=10**9)
    assert bound["bytes_per_step"] == 24 * 10**9
    assert bound["decode_tokens_per_s_bound"] == pytest.approx(8 * 4800e9 / 24e9)
    assert direct.roofline(None, {}, 8, 1, 1) is None


def test_prefill_decode_and_training_on_the_cpu():
    pytest.importorskip("torch")
    from dossier_agent.jobs import throughput
    from test_loadgen_job import Ctx

    ctx = Ctx()
    spec = {"direct": {"model": TINY, "context_tokens": 32, "batch_sizes": [1, 2], "decode_steps": 3,
                       "warmup_steps": 1, "device": "cpu", "memory_bandwidth_gb_s": 50}}
    result = throughput.run(spec, ctx)["direct"]
    assert [p["batch"] for p in result["points"]] == [1, 2]
    for point in result["points"]:
        assert point["prefill_tokens_per_s"] > 0 and point["decode_tokens_per_s"] > 0
        assert point["tpot_p50_s"] > 0 and point["ttft_s"] == point["prefill_s"]
        assert point["roofline"]["decode_tokens_per_s_bound"] > 0 and point["decode_fraction_of_roofline"] > 0
    assert result["weight_bytes"] > 0 and result["timing"].startswith("perf_counter")
    assert [kind for kind, _ in ctx.events] == ["measurement", "measurement"]
    assert json.loads(ctx.artifacts["direct.json"])["points"][0]["batch"] == 1

    training = throughput.run({"direct": {"model": TINY, "context_tokens": 64, "workload": "training",
                                          "device": "cpu", "warmup_steps": 1, "peak_tflops": 1.0,
                                          "training": {"batch": 2, "sequence": 16, "steps": 1}}}, Ctx())
    step = training["direct"]["training"]
    assert step["tokens_per_s"] > 0 and step["mfu"] > 0 and step["loss_finite"]
