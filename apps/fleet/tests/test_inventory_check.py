"""The inventory check: a node's reported hardware against the node the quote promised."""

from hypothesis import given
from hypothesis import strategies as st

from apps.fleet.inventory_check import ExpectedNode, Interconnect, MismatchField, check_inventory, model_matches
from apps.fleet.tests.helpers import inventory

H200_NODE = ExpectedNode(gpu_model="H200", gpu_count=8, memory_mib=143771, interconnect=Interconnect.NVLINK,
                         nvlink_links_per_gpu=18)


def fields(mismatches):
    return [mismatch.field for mismatch in mismatches]


def test_a_node_as_quoted_has_no_mismatch():
    assert check_inventory(inventory(gpus=8), H200_NODE) == []


def test_a_different_gpu_model_is_flagged_on_every_gpu():
    mismatches = check_inventory(inventory(gpus=8, name="NVIDIA H100 80GB HBM3"), H200_NODE)
    assert fields(mismatches) == [MismatchField.GPU_MODEL] * 8
    assert mismatches[0].found == "NVIDIA H100 80GB HBM3" and mismatches[0].gpu_index == 0


def test_fewer_gpus_than_quoted_is_flagged():
    mismatches = check_inventory(inventory(gpus=4), H200_NODE)
    assert fields(mismatches) == [MismatchField.GPU_COUNT]
    assert mismatches[0].as_dict() == {"field": "gpu_count", "expected": 8, "found": 4, "gpu_index": None}


def test_less_memory_than_quoted_beyond_the_tolerance_is_flagged():
    assert fields(check_inventory(inventory(gpus=8, memory_mib=97871), H200_NODE)) == [MismatchField.MEMORY] * 8
    assert check_inventory(inventory(gpus=8, memory_mib=143000), H200_NODE) == []


def test_nvlink_with_too_few_active_links_is_flagged():
    mismatches = check_inventory(inventory(gpus=8, nvlink=12), H200_NODE)
    assert fields(mismatches) == [MismatchField.INTERCONNECT] * 8
    assert mismatches[0].expected == 18 and mismatches[0].found == 12


def test_nvlink_without_a_link_count_needs_one_active_link():
    node = ExpectedNode(interconnect=Interconnect.NVLINK)
    assert check_inventory(inventory(gpus=2, nvlink=1), node) == []
    assert fields(check_inventory(inventory(gpus=2, nvlink=0), node)) == [MismatchField.INTERCONNECT] * 2


def test_a_node_without_gpus_says_so():
    mismatches = check_inventory(inventory(gpus=0), H200_NODE)
    assert fields(mismatches) == [MismatchField.GPU_PRESENT, MismatchField.GPU_COUNT]
    assert mismatches[0].found == "NVML Shared Library Not Found"


def test_nothing_stated_means_nothing_checked():
    assert check_inventory(inventory(gpus=0), ExpectedNode()) == []


def test_an_unreported_memory_figure_is_a_mismatch():
    reported = inventory(gpus=1)
    reported["gpus"][0]["memory_total_mib"] = None
    assert fields(check_inventory(reported, ExpectedNode(memory_mib=143771))) == [MismatchField.MEMORY]


def test_model_names_match_on_their_identifying_words():
    assert model_matches("H200", "NVIDIA H200")
    assert model_matches("H100 SXM", "NVIDIA H100 80GB HBM3")
    assert model_matches("NVIDIA H100 PCIe", "NVIDIA H100 PCIe")
    assert model_matches("L40S", "NVIDIA L40S")
    assert not model_matches("H100", "NVIDIA H200")
    assert not model_matches("L40", "NVIDIA L40S")
    assert not model_matches("A100", "")
    assert not model_matches("SXM", "NVIDIA H100 SXM")


@given(st.integers(min_value=1, max_value=16), st.integers(min_value=1, max_value=16))
def test_the_count_check_flags_exactly_the_count_differences(reported, quoted):
    mismatches = check_inventory(inventory(gpus=reported), ExpectedNode(gpu_count=quoted))
    assert (mismatches != []) == (reported != quoted)
