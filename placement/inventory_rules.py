"""What an inventory record is and what it allows, for every layer.

A record has the fields of FIELDS, in that order wherever a record is a
tuple (a row the state reads, a what-if's values).  The handlers fill in
omitted fields from DEFAULTS and refuse what ``problem`` names; storage
checks claims against ``capacity``; the in-memory state, the search, the
audit and the overview show and compare ``capacity`` too.  Written once
here, so that none of them can drift from the others, or from upstream.
"""

import math

FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
          'allocation_ratio')

# The largest value of an integer field (its column is a 32-bit INTEGER).
MAX_INT = 0x7FFFFFFF

# What an omitted field means (total is required).
DEFAULTS = {
    'reserved': 0,
    'min_unit': 1,
    'max_unit': MAX_INT,
    'step_size': 1,
    'allocation_ratio': 1.0,
}


def scaled(total, reserved, allocation_ratio):
    """(total - reserved) x allocation_ratio: numbers, or the columns of
    a statement (SQL compares the product unrounded, as upstream's does).
    """
    return (total - reserved) * allocation_ratio


def capacity(total, reserved, allocation_ratio):
    """What can be allocated: ``scaled`` rounded toward zero, as upstream
    shows it.  A ratio near the float limit can scale past it: that
    capacity is infinite (of either sign) rather than an integer.  For a
    whole amount, ``amount <= capacity`` is ``amount <= scaled``."""
    value = scaled(total, reserved, allocation_ratio)
    return value if math.isinf(value) else int(value)


def capacity_of(record):
    """``capacity`` of a record (a mapping of FIELDS)."""
    return capacity(record['total'], record['reserved'],
                    record['allocation_ratio'])


def with_defaults(fields):
    """The record ``fields`` (a mapping with at least ``total``) names,
    DEFAULTS filling in what it omits."""
    record = dict(DEFAULTS)
    record.update((name, fields[name]) for name in FIELDS if name in fields)
    return record


def problem(provider_uuid, resource_class, record,
            reserved_can_be_total=True):
    """Why ``record`` cannot be stored as the provider's inventory of
    ``resource_class``, in upstream's words, or None.

    Before microversion 1.26 all of total may not be reserved; from 1.26
    it may, but reserved may still not exceed total.  Either way the test
    is on the capacity, so a ratio that scales it to nothing counts too.
    """
    value = capacity_of(record)
    if value < 0 or (value == 0 and not reserved_can_be_total):
        return ("Invalid inventory for '%s' on resource provider '%s'. "
                "The reserved value is greater than %stotal."
                % (resource_class, provider_uuid,
                   '' if reserved_can_be_total else 'or equal to '))
    return None
