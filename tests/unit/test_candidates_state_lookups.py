"""The lookups ``providers.State`` offers its readers, on a state built
by hand: what each answers for a name, id or uuid it does not know."""

from placement.state import providers


def _state():
    state = providers.State()
    state._class_ids, state._class_names = {'VCPU': 0}, {0: 'VCPU'}
    state._trait_ids, state._trait_names = {'HW_CPU_X86_AVX2': 7}, {
        7: 'HW_CPU_X86_AVX2'}
    provider = providers.Provider(1, 'uuid-1', None, 1)
    provider.inventory = {0: providers.Inventory(8, 0, 1, 8, 1, 1.0, 0)}
    provider.traits = frozenset({7})
    provider.aggregates = frozenset({'agg-1'})
    state._add(provider)
    state._trees_settled()
    return state, provider


def test_known_names_ids_and_uuids():
    state, provider = _state()
    assert state.provider(1) is provider
    assert state.provider_by_uuid('uuid-1') is provider
    assert state.class_id('VCPU') == 0 and state.class_name(0) == 'VCPU'
    assert state.trait_id('HW_CPU_X86_AVX2') == 7
    assert state.trait_name(7) == 'HW_CPU_X86_AVX2'
    assert state.holding_class(0) == {1}
    assert state.holding_trait(7) == {1}
    assert state.in_aggregate('agg-1') == {1}
    assert state.members(1) == (1,)


def test_unknown_ones_answer_none_or_nobody():
    state, _ = _state()
    assert state.provider_by_uuid('uuid-2') is None
    assert state.class_id('DISK_GB') is None
    assert state.trait_id('CUSTOM_NONE') is None
    assert state.trait_changed_at(7) is None
    assert not state.holding_class(5)
    assert not state.holding_trait(8)
    assert not state.in_aggregate('agg-2')
    # Asking creates no entry in the state's indexes.
    assert 'agg-2' not in state._aggregate_members
