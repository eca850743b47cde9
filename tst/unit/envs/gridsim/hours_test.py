"""Hour sets: the four accepted forms, and errors that quote the bad text and list the accepted forms."""

import pytest

from agent_env.envs.gridsim.hours import ACCEPTED_FORMS, HourSetError, hour_label, parse_hours


@pytest.mark.parametrize(
    ("spec", "hours"),
    [
        ("HE07", (7,)),
        ("HE07-HE10", (7, 8, 9, 10)),
        ("HE01-HE01", (1,)),
        (" he7 - HE08 ", (7, 8)),
        ("HE24", (24,)),
        ("all", tuple(range(1, 25))),
        ("ALL", tuple(range(1, 25))),
        ([8, 7, 8], (7, 8)),
        ([24.0, 1], (1, 24)),
    ],
)
def test_accepted_forms_parse_to_sorted_distinct_hours(spec, hours):
    assert parse_hours(spec) == hours


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("HE00", "names hour 0, outside HE01..HE24"),
        ("HE25", "names hour 25, outside HE01..HE24"),
        ("HE10-HE07", "runs backwards"),
        ("7", "does not parse"),
        ("HE7-", "does not parse"),
        ("", "does not parse"),
        ([], "is empty"),
        ([0, 1], "names hour 0"),
        ([7.5], "holds 7.5, not a whole hour"),
        ([True], "holds True, not a whole hour"),
        (["HE07"], "holds 'HE07', not a whole hour"),
        (None, "is not a string or a list"),
        (7, "is not a string or a list"),
    ],
)
def test_bad_hour_sets_raise_quoting_the_text_and_the_accepted_forms(spec, says):
    with pytest.raises(HourSetError) as caught:
        parse_hours(spec)
    assert says in str(caught.value)
    assert ACCEPTED_FORMS in str(caught.value) or "runs backwards" in says


def test_hour_set_error_is_a_value_error_with_a_stable_code():
    assert issubclass(HourSetError, ValueError)
    assert HourSetError.code == "invalid_hour_set"


def test_hour_labels_are_two_digit_hour_ending():
    assert [hour_label(1), hour_label(24)] == ["HE01", "HE24"]
