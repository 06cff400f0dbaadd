"""The shortlist: memory fit first, then the guide's direction for the workload, then what the workload needs most."""

from types import SimpleNamespace

from apps.workloads import estimates, rules
from apps.workloads.estimates import GpuCapacity
from apps.workloads.memory.capacity import Capacity, CapacitySource
from apps.workloads.shortlist import DOES_NOT_FIT, FITS_AS_PLANNED, FITS_WITH_MORE_GPUS, build_shortlist
from apps.workloads.tests.factories import REALTIME_READY_FIELDS

GIB = 2**30


def gpu(name, gib, family=None, nvlink=None, bandwidth=None):
    capacity = Capacity(gib * GIB, CapacitySource.DATASHEET, f"{gib} GiB")
    return GpuCapacity(name, name, capacity, family, nvlink, bandwidth)


CATALOG = [
    gpu("RTX 24", 24, "rtx", None, 1.0),
    gpu("L40S 48", 48, "l40s", None, 0.86),
    gpu("A100 80", 80, "a100", 600, 2.0),
    gpu("H100 80", 80, "h100", 900, 3.35),
    gpu("H200 141", 141, "h200", 900, 4.8),
    gpu("B200 180", 180, "b200", 1800, 8.0),
    gpu("Unknown 96", 96, None, None, 1.8),
]


def shortlist_for(**changes):
    values = {**REALTIME_READY_FIELDS, **changes}
    summary = SimpleNamespace(**values)
    analysis = estimates.analyse(estimates.plan_for(summary), CATALOG)
    return build_shortlist(values["workload_type"], analysis)


def names(shortlist):
    return [entry.gpu_fit.gpu.name for entry in shortlist.entries]


def test_gpus_that_fit_rank_above_those_needing_more_gpus_and_those_that_never_fit():
    shortlist = shortlist_for()
    classes = [entry.fit_class for entry in shortlist.entries]
    assert classes == sorted(classes)
    assert shortlist.entries[0].fit_class == FITS_AS_PLANNED
    assert {entry.gpu_fit.gpu.name for entry in shortlist.entries if entry.fit_class >= FITS_WITH_MORE_GPUS} == {
        "RTX 24",
        "L40S 48",
    }


def test_real_time_serving_ranks_fitting_guide_gpus_by_memory_bandwidth():
    shortlist = shortlist_for()
    assert shortlist.answer.code == "realtime_llm"
    assert shortlist.need == rules.NEED_TAIL_LATENCY
    assert names(shortlist)[:4] == ["B200 180", "H200 141", "H100 80", "A100 80"]
    # A GPU the guide does not point to comes after the ones it does, even with more memory.
    assert names(shortlist).index("Unknown 96") > names(shortlist).index("A100 80")


def test_batch_work_prefers_the_smallest_gpu_that_fits():
    shortlist = shortlist_for(
        workload_type="batch_inference",
        concurrent_sessions_peak=1,
        p95_input_tokens=1000,
        mean_input_tokens=500,
        p95_output_tokens=200,
        mean_output_tokens=100,
    )
    assert shortlist.need == rules.NEED_COST_PER_OUTPUT
    fitting = [entry for entry in shortlist.entries if entry.fits_as_planned and entry.in_guide_direction]
    assert [entry.gpu_fit.gpu.name for entry in fitting][:2] == ["L40S 48", "A100 80"]


def test_training_ranks_by_interconnect_and_counts_the_gpus_needed():
    shortlist = shortlist_for(
        workload_type="full_fine_tuning",
        training_sequence_length=4096,
        zero_stage=3,
        data_parallel_gpus=1,
        recompute="full",
    )
    assert shortlist.need == rules.NEED_INTERCONNECT
    first = shortlist.entries[0]
    assert first.fit_class in (FITS_AS_PLANNED, FITS_WITH_MORE_GPUS)
    needed = [entry.gpus_needed for entry in shortlist.entries if entry.gpus_needed is not None]
    assert needed == sorted(needed)  # fewer GPUs first among those that need more than planned
    assert all(entry.fit_class != DOES_NOT_FIT for entry in shortlist.entries[:3])


def test_evaluation_points_to_no_gpu_family():
    shortlist = shortlist_for(workload_type="evaluation", batch_size=8)
    assert shortlist.families == ()
    assert not any(entry.in_guide_direction for entry in shortlist.entries)
