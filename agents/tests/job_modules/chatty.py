"""Test job: emits many events of every kind and two artifacts."""

KIND = "test_chatty"


def run(spec, ctx):
    count = int(spec.get("events", 10))
    for index in range(count):
        ctx.progress(index / count, f"step {index}")
        ctx.event("measurement", {"index": index, "value": index * 1.5})
    ctx.log("measured", count=count)
    first = ctx.add_artifact(b'{"request": 1}\n{"request": 2}\n', "requests.jsonl", "application/x-ndjson")
    second = ctx.add_artifact(bytes(range(256)) * int(spec.get("artifact_kib", 1) * 4), "blob.bin",
                              "application/octet-stream")
    return {"events": count, "artifacts": [first, second], "workdir_exists": ctx.workdir.is_dir(),
            "job_id": ctx.job_id, "inventory_has_host": "host" in ctx.inventory}
