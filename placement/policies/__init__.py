"""Default policy rules for the placement API.

The rules live in one module per API resource; this package gathers them
so the enforcer (and the oslo.policy sample/doc generators, via the
``oslo.policy.policies`` entry point) see a single list.
"""

import itertools

from placement.policies import aggregate
from placement.policies import allocation
from placement.policies import allocation_candidate
from placement.policies import allocation_candidate_extras
from placement.policies import audit
from placement.policies import base
from placement.policies import inventory
from placement.policies import overview
from placement.policies import reshaper
from placement.policies import resource_class
from placement.policies import resource_provider
from placement.policies import trait
from placement.policies import usage


def list_rules():
    """Return every placement policy default.

    The order matches upstream placement so generated sample files and
    documentation come out the same; the generic base rules come first
    because the per-resource rules refer to them.
    """
    return list(itertools.chain(
        base.list_rules(),
        resource_provider.list_rules(),
        resource_class.list_rules(),
        inventory.list_rules(),
        aggregate.list_rules(),
        usage.list_rules(),
        trait.list_rules(),
        allocation.list_rules(),
        allocation_candidate.list_rules(),
        reshaper.list_rules(),
        # This service's extensions, after upstream's rules.
        allocation_candidate_extras.list_rules(),
        audit.list_rules(),
        overview.list_rules(),
    ))
