"""One statement of "does this amount fit this inventory record, and if
not, why": ``queries.misfit``, which the search decides by
(``with_room``) and the explain funnel words (``capacity_reason``)."""

import pytest

from placement.state import queries
from placement.candidates import funnel
from placement.state import providers

# total 64, reserved 4, min_unit 2, max_unit 16, step_size 2, ratio 1.0,
# 54 used: 6 free.
RECORD = providers.Inventory(64, 4, 2, 16, 2, 1.0, 54)


class _Provider:
    def __init__(self, inventory):
        self.inventory = inventory


@pytest.mark.parametrize('record, amount, check, words', [
    (None, 2, 'inventory', 'VCPU: no inventory'),
    (RECORD, 1, 'min_unit', 'VCPU: needs 1, min_unit 2'),
    (RECORD, 18, 'max_unit', 'VCPU: needs 18, max_unit 16'),
    (RECORD, 3, 'step_size', 'VCPU: needs 3, not a multiple of step_size 2'),
    (RECORD, 8, 'free',
     'VCPU: needs 8, free 6 = (64 - 4 reserved) x 1.0 - 54 used'),
    (RECORD, 6, None, None),
])
def test_the_first_failed_check_decides_and_is_worded(record, amount, check,
                                                      words):
    assert queries.misfit(record, amount) == check
    assert funnel.capacity_reason('VCPU', record, amount) == words
    inventory = {} if record is None else {1: record}
    fits = queries.with_room(_Provider(inventory), {1: amount}) == [1]
    assert fits == (check is None)


def test_an_amount_breaking_several_limits_names_the_first():
    # Above max_unit, off the step and beyond what is free: max_unit.
    assert queries.misfit(RECORD, 19) == 'max_unit'
