"""The shared query-string parsers, on their own."""

import pytest

from placement import errors
from placement import query_params as qp

AGG_A = 'a0a0a0a0-0000-4000-8000-00000000000a'
AGG_B = 'b0b0b0b0-0000-4000-8000-00000000000b'


def test_parse_reads_pairs_as_upstream():
    query = qp.Query.parse('a=1&b=x+y;c&&a=%E2%98%83&d=e=f')
    assert query.pairs == [('a', '1'), ('b', 'x y'), ('c', ''),
                           ('a', '\u2603'), ('d', 'e=f')]
    assert query.getall('a') == ['1', '\u2603']
    assert query.get('a') == '\u2603'
    assert query.get('zz') is None
    assert 'c' in query and 'zz' not in query
    assert list(query.as_dict().items()) == [
        ('a', '\u2603'), ('b', 'x y'), ('c', ''), ('d', 'e=f')]


def test_parse_rejects_bytes_that_are_not_utf8():
    with pytest.raises(errors.BadRequest) as caught:
        qp.Query.parse('name=%ff')
    assert caught.value.description.startswith(
        "Invalid query string parameters: 'utf-8' codec can't decode")


def test_validate_names_the_problem():
    schema = {'type': 'object', 'properties': {'a': {'type': 'string'}},
              'additionalProperties': False}
    qp.validate(qp.Query.parse('a=1'), schema)
    with pytest.raises(errors.BadRequest) as caught:
        qp.validate(qp.Query.parse('b=1'), schema)
    assert "('b' was unexpected)" in caught.value.description


@pytest.mark.parametrize('value,expected', [
    (AGG_A, True),
    (AGG_A.replace('-', ''), True),
    (AGG_A.upper(), True),
    ('{%s}' % AGG_A, True),
    ('urn:uuid:' + AGG_A, True),
    ('', False),
    (' ' + AGG_A, False),
    (AGG_A[:-1], False),
    (None, False),
])
def test_is_uuid_like(value, expected):
    assert qp.is_uuid_like(value) is expected


def test_resources_keep_request_order():
    assert list(qp.resources('VCPU:2,MEMORY_MB:1024').items()) == [
        ('VCPU', 2), ('MEMORY_MB', 1024)]


def test_traits_shapes():
    assert qp.traits('A,!B,C', allow_forbidden=True) == ([{'A'}, {'C'}],
                                                         {'B'})
    assert qp.traits('in:A, B', allow_any=True) == ([{'A', 'B'}], set())


def test_flat_traits_for_root_required():
    assert qp.flat_traits('A,!B', allow_forbidden=True) == {'A', '!B'}
    with pytest.raises(errors.BadRequest):
        qp.flat_traits('in:A,B', allow_forbidden=True)


def test_required_traits_with_suffix():
    query = qp.Query.parse('required1=A&required1=in:B,C&required=D')
    assert qp.required_traits(query, (1, 39), suffix='1') == (
        [{'A'}, {'B', 'C'}], set())
    older = qp.Query.parse('required1=A&required1=!B,C')
    assert qp.required_traits(older, (1, 38), suffix='1') == (
        [{'C'}], {'B'})
    assert qp.required_traits(older, (1, 39), suffix='1') == (
        [{'A'}, {'C'}], {'B'})


def test_member_of_errors_name_the_suffixed_parameter():
    query = qp.Query.parse('member_of2=%s&member_of2=%s' % (AGG_A, AGG_B))
    with pytest.raises(errors.BadRequest) as caught:
        qp.member_of(query, (1, 23), suffix='2')
    assert caught.value.description == (
        'Multiple member_of2 parameters are not supported')
    query = qp.Query.parse('member_of2=!' + AGG_A)
    with pytest.raises(errors.BadRequest) as caught:
        qp.member_of(query, (1, 31), suffix='2')
    assert caught.value.description == (
        'Forbidden member_of2 parameters are not supported in the '
        'specified microversion')


def test_member_of_shapes():
    query = qp.Query.parse('member_of=in:%s,%s&member_of=!%s'
                           % (AGG_A, AGG_B, AGG_B))
    assert qp.member_of(query, (1, 32)) == ([{AGG_A, AGG_B}], {AGG_B})


def test_in_tree_strips_blanks_and_wants_a_uuid():
    assert qp.in_tree(' %s ' % AGG_A) == AGG_A
    with pytest.raises(errors.BadRequest) as caught:
        qp.in_tree('nope')
    assert caught.value.description == (
        "Invalid query string parameters: Expected 'in_tree' parameter to "
        "be a format of uuid. Got: nope")


def test_repeated_parameters_reuse_their_validators():
    """Each request's limit and group_policy are checked alone; their
    schemas must be built once, or the validator cache grows with every
    request (and each request pays for building a validator)."""
    from placement import candidate_query
    from placement.schemas import validation
    query = 'resources=VCPU:1&limit=5&group_policy=none'
    candidate_query.parse(qp.Query.parse(query), (1, 39))
    size = len(validation._VALIDATORS)
    for _ in range(3):
        candidate_query.parse(qp.Query.parse(query),
                                         (1, 39))
    assert len(validation._VALIDATORS) == size
