"""apps/common/json_input.py: the one strict reading of a JSON body that will be stored."""

import pytest

from apps.common import json_input


@pytest.mark.parametrize(("body", "path"), [
    ('{"a": [1, {"b\\u0000": 2}]}', "a[1]"),
    ('{"a": [1, {"b": "\\u0000"}]}', "a[1].b"),
    ('{"a": {"b": NaN}}', "a.b"),
    ('[1, 2, 1e400]', "[2]"),
    ('{"n": 9223372036854775808}', "n"),
    ('{"s": "\\udfff"}', "s"),
])
def test_the_error_names_the_path_of_the_value(body, path):
    with pytest.raises(json_input.JsonInputError) as refused:
        json_input.loads(body)
    assert refused.value.path == path


def test_depth_counts_the_top_level_as_one():
    assert json_input.loads("[" * 64 + "]" * 64) is not None
    with pytest.raises(json_input.JsonInputError, match="Nested deeper than 64"):
        json_input.loads("[" * 65 + "]" * 65)


@pytest.mark.parametrize("body", [b"{", b"\xff\xfe\x00", "[" * 100_000])
def test_what_is_not_json_at_all_has_no_path(body):
    with pytest.raises(json_input.JsonInputError) as refused:
        json_input.loads(body)
    assert refused.value.path == ""


def test_good_values_come_back_unchanged():
    assert json_input.loads('{"a": [1, -2.5, "é", null, true], "b": -9223372036854775808}') == {
        "a": [1, -2.5, "é", None, True], "b": -(2**63)}
