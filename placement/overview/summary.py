"""The cloud's capacity per resource class, from the candidate state.

For each class: the sum of capacity, used, free (each provider's own
free units, never below zero) and over (units used beyond capacity), so
``capacity - used == free - over``; how many providers have inventory of
it, how many have some free and how many are over capacity; the largest
free on one provider; and a histogram of free units per provider in
power-of-two bins (0 or less, 1, 2-3, 4-7 ...), which shows how
fragmented the free capacity is.

Providers with the same inventory records and usage share one record
object in the state (``state.providers``), so each distinct set is added up
once, times the number of providers holding it: at 10,000 alike compute
nodes that is a handful of sums, not 30,000.
"""

from placement.state import questions


def _bin(free):
    """The histogram bin of ``free`` units: 0 for none (or less), then
    n for 2**(n-1) <= free < 2**n."""
    return free.bit_length() if free > 0 else 0


def bins(counts):
    """[{min, max, providers}] of ``counts`` ({bin: providers}), every
    bin from 0 to the highest non-empty one."""
    top = max(counts, default=0)
    return [{'min': 0 if index == 0 else 1 << (index - 1),
             'max': 0 if index == 0 else (1 << index) - 1,
             'providers': counts.get(index, 0)}
            for index in range(top + 1)]


@questions.question
def summary(state):
    """The JSON-ready body of ``GET /overview``."""
    shared = {}     # id of an inventory dict -> [dict, providers with it]
    for provider in state.providers.values():
        entry = shared.get(id(provider.inventory))
        if entry is None:
            shared[id(provider.inventory)] = [provider.inventory, 1]
        else:
            entry[1] += 1
    classes = {}
    over_providers = set()
    for inventory, count in shared.values():
        for class_id, record in inventory.items():
            sums = classes.get(class_id)
            if sums is None:
                sums = classes[class_id] = {
                    'total': 0, 'reserved': 0, 'capacity': 0, 'used': 0,
                    'free': 0, 'over': 0, 'providers': 0,
                    'providers_with_free': 0, 'providers_over_capacity': 0,
                    'max_free': 0, 'histogram': {}}
            free = record.capacity - record.used
            sums['total'] += record.total * count
            sums['reserved'] += record.reserved * count
            sums['capacity'] += record.capacity * count
            sums['used'] += record.used * count
            sums['providers'] += count
            if free > 0:
                sums['free'] += free * count
                sums['providers_with_free'] += count
                sums['max_free'] = max(sums['max_free'], free)
            elif free < 0:
                sums['over'] -= free * count
                sums['providers_over_capacity'] += count
                over_providers.add(id(inventory))
            histogram = sums['histogram']
            histogram[_bin(free)] = histogram.get(_bin(free), 0) + count
    over_count = sum(count for inventory, count in shared.values()
                     if id(inventory) in over_providers)
    body = {}
    for class_id, sums in classes.items():
        sums['histogram'] = bins(sums['histogram'])
        body[state.class_name(class_id)] = sums
    return {
        'providers': len(state.providers),
        'trees': len(state.roots()),
        'sharing_providers': len(state.sharing),
        'providers_over_capacity': over_count,
        'resource_classes': dict(sorted(body.items())),
    }
