"""Traits: the catalogue (standard and custom) and the traits of providers.

Lists come back ordered by trait id: standard traits (synced first) before
custom ones, custom ones in the order they were created, the same on
every backend.
"""

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement.storage import changes
from placement.storage import exceptions
from placement.storage import names as names_lookup
from placement.storage import prepared
from placement.storage import providers_core
from placement.storage import tables
from placement.storage.tables import RP, RP_TRAIT, TRAIT

CUSTOM_PREFIX = 'CUSTOM_'

_COLUMNS = (TRAIT.c.id, TRAIT.c.name, TRAIT.c.created_at,
            TRAIT.c.updated_at)


def _as_dicts(rows):
    return [dict(row._mapping) for row in rows]


def list_traits(conn, name_in=None, prefix=None, associated=None):
    """Traits as dicts, filtered when asked.

    ``name_in``: only these names; ``prefix``: only names LIKE prefix%
    (a SQL pattern, as upstream matches it); ``associated``: True for
    traits some provider has, False for traits no provider has.
    """
    query = sa.select(*_COLUMNS)
    if name_in is not None:
        query = query.where(TRAIT.c.name.in_(list(name_in)))
    if prefix is not None:
        query = query.where(TRAIT.c.name.like(prefix + '%'))
    if associated is not None:
        used = sa.exists().where(RP_TRAIT.c.trait_id == TRAIT.c.id)
        query = query.where(used if associated else ~used)
    return _as_dicts(conn.execute(query.order_by(TRAIT.c.id)))


def find_by_name(conn, name):
    row = conn.execute(sa.select(*_COLUMNS)
                       .where(TRAIT.c.name == name)).first()
    return dict(row._mapping) if row else None


def get_by_name(conn, name):
    """The trait as a dict; NotFound names it."""
    trait = find_by_name(conn, name)
    if trait is None:
        raise exceptions.NotFound('No such trait(s): %s.' % name)
    return trait


def trait_ids_by_name(conn, names):
    """{name: id} for those of ``names`` that exist (others are absent)."""
    return names_lookup.ids_by_name(conn, TRAIT, names)


def ensure(conn, name):
    """(trait, created): create the trait ``name`` unless it exists."""
    return names_lookup.ensure(conn, name, find_by_name, get_by_name,
                               _create)


def _create(conn, name):
    try:
        with conn.begin_nested():
            conn.execute(TRAIT.insert().values(
                name=name, created_at=tables.utcnow()))
    except sa_exc.IntegrityError:
        raise exceptions.Duplicate('Trait %s already exists.' % name)
    changes.names_changed(conn)
    return get_by_name(conn, name)


def delete(conn, name):
    """Remove the custom trait ``name`` unless a provider has it."""
    trait = get_by_name(conn, name)
    if not name.startswith(CUSTOM_PREFIX):
        raise exceptions.ReadOnly('Cannot delete standard trait %s.' % name)
    in_use = conn.execute(sa.select(RP_TRAIT.c.trait_id).where(
        RP_TRAIT.c.trait_id == trait['id']).limit(1)).first()
    if in_use:
        raise exceptions.Conflict(
            'The trait %s is in use by a resource provider.' % name)
    conn.execute(TRAIT.delete().where(TRAIT.c.id == trait['id']))
    changes.names_changed(conn)


_OF_PROVIDER = prepared.Statement(
    sa.select(*_COLUMNS)
    .select_from(TRAIT.join(RP_TRAIT, RP_TRAIT.c.trait_id == TRAIT.c.id))
    .where(RP_TRAIT.c.resource_provider_id == sa.bindparam('provider'))
    .order_by(TRAIT.c.id))


def _provider_traits_and_lacking(names_match, lock):
    """The statement reading the provider ``uuid`` (a row, ``lacking``
    false, with each of its traits or with none), and the traits
    ``names_match`` selects that it does not have (``lacking`` true).
    ``lock``: the provider's row is locked until the transaction ends."""
    provider = sa.select(RP.c.id, RP.c.generation).where(
        RP.c.uuid == sa.bindparam('uuid'))
    if lock:
        provider = provider.with_for_update()
    provider = provider.subquery('provider')
    owned = (sa.select(provider.c.id.label('provider_id'),
                       provider.c.generation, *_COLUMNS,
                       sa.false().label('lacking'))
             .select_from(provider.outerjoin(
                 RP_TRAIT, RP_TRAIT.c.resource_provider_id == provider.c.id)
                 .outerjoin(TRAIT, TRAIT.c.id == RP_TRAIT.c.trait_id)))
    its_traits = (sa.select(RP_TRAIT.c.trait_id)
                  .join(RP, RP.c.id == RP_TRAIT.c.resource_provider_id)
                  .where(RP.c.uuid == sa.bindparam('uuid')))
    lacking = (sa.select(sa.cast(sa.null(), sa.Integer),
                         sa.cast(sa.null(), sa.Integer),
                         *_COLUMNS, sa.true())
               .where(names_match, TRAIT.c.id.not_in(its_traits)))
    return prepared.Statement(sa.union_all(owned, lacking))


# A write of a provider's traits reads the provider, its traits and those
# named that it lacks in one statement (prepared: nova's resource
# trackers send it, with all the provider's traits and one more or
# less).  PostgreSQL takes the names as one array, and locks the
# provider's row at once, so that the generation read is the one the
# change will bump (``_replace``).
_PROVIDER_AND_TRAITS = _provider_traits_and_lacking(
    TRAIT.c.name.in_(sa.bindparam('names', expanding=True)), lock=False)
_PG_PROVIDER_AND_TRAITS = _provider_traits_and_lacking(
    TRAIT.c.name == sa.func.any(sa.cast(
        sa.bindparam('names'), sa.ARRAY(sa.String))), lock=True)


def _provider_and_traits(conn, uuid, names):
    """(the provider's id and generation, its traits as dicts, the
    traits of ``names`` it lacks as dicts); NotFound names the uuid."""
    statement = (_PG_PROVIDER_AND_TRAITS
                 if conn.dialect.name == 'postgresql'
                 else _PROVIDER_AND_TRAITS)
    rows = statement.execute(conn, {'uuid': uuid, 'names': names}).all()
    owned = [row for row in rows if not row.lacking]
    if not owned:
        raise providers_core.not_found(uuid)
    provider = {'id': owned[0].provider_id, 'generation': owned[0].generation}
    return (provider,
            _trait_dicts(row for row in owned if row.id is not None),
            _trait_dicts(row for row in rows if row.lacking))


def _trait_dicts(rows):
    """The traits of ``_provider_traits_and_lacking``'s rows."""
    columns = [column.name for column in _COLUMNS]
    return [dict(zip(columns, row[2:2 + len(columns)])) for row in rows]


def _traits_of(conn, provider_id):
    return [row._asdict() for row in
            _OF_PROVIDER.execute(conn, {'provider': provider_id})]


def provider_traits(conn, uuid):
    """(provider, its traits as dicts)."""
    provider = providers_core.get_by_uuid(conn, uuid)
    return provider, _traits_of(conn, provider['id'])


def _replace(conn, provider, current, trait_ids):
    """Make the provider's traits (``current``, as
    ``_provider_and_traits`` read them) exactly ``trait_ids``.

    The generation is bumped only when the set changes, and first, so
    that a concurrent writer fails on the generation rather than on a
    duplicate row.  On PostgreSQL the provider's row was locked when it
    was read (``_provider_and_traits``), so no other writer can have
    bumped it since: the change goes with the change log's statement,
    unread (``prepared.Statement``'s ``defer``).  Returns the provider's
    generation afterwards.
    """
    existing = {t['id'] for t in current}
    to_add = set(trait_ids) - existing
    to_delete = existing - set(trait_ids)
    if not to_add and not to_delete:
        changes.touch(conn)
        return provider['generation']
    if conn.dialect.name == 'postgresql':
        _PG_BUMP_AND_SET.execute(conn, {
            'provider': provider['id'], 'expected': provider['generation'],
            'remove': sorted(to_delete), 'add': sorted(to_add),
            'now': tables.utcnow()}, defer=True)
        changes.touch(conn, provider['id'])
        return provider['generation'] + 1
    try:
        generation = providers_core.increment_generation(
            conn, provider['id'], provider['generation'])
    except exceptions.ConcurrentUpdate:
        raise _concurrent_update()
    if to_delete:
        conn.execute(RP_TRAIT.delete().where(
            RP_TRAIT.c.resource_provider_id == provider['id'],
            RP_TRAIT.c.trait_id.in_(sorted(to_delete))))
    if to_add:
        now = tables.utcnow()
        conn.execute(RP_TRAIT.insert(), [
            {'resource_provider_id': provider['id'], 'trait_id': trait_id,
             'created_at': now} for trait_id in sorted(to_add)])
    return generation


def _concurrent_update():
    return exceptions.ConcurrentUpdate(
        'Another thread concurrently updated the resource provider data. '
        'Please retry your update')


# On PostgreSQL a write's generation bump, removals and additions are one
# prepared statement, each list of trait ids one array; the rows change
# only if the bump did.
_PG_BUMP_AND_SET = prepared.Statement(sa.text(
    'WITH bumped AS (UPDATE resource_providers '
    'SET generation = CAST(:expected AS INTEGER) + 1, '
    'updated_at = CAST(:now AS TIMESTAMP) '
    'WHERE id = CAST(:provider AS INTEGER) '
    'AND generation = CAST(:expected AS INTEGER) RETURNING id), '
    'removed AS (DELETE FROM resource_provider_traits '
    'WHERE resource_provider_id IN (SELECT id FROM bumped) '
    'AND trait_id = ANY(CAST(:remove AS INTEGER[]))), '
    'added AS (INSERT INTO resource_provider_traits '
    '(resource_provider_id, trait_id, created_at) '
    'SELECT id, unnest(CAST(:add AS INTEGER[])), CAST(:now AS TIMESTAMP) '
    'FROM bumped) '
    'SELECT count(*) FROM bumped'))


def set_provider_traits(conn, uuid, names, generation):
    """Replace the provider's traits with ``names``.

    ``generation`` is the one the caller saw; a mismatch is a
    ConcurrentUpdate.  Unknown names are InvalidInput.  Returns (the
    provider's traits as dicts, its new generation).
    """
    wanted = dict.fromkeys(names)
    provider, current, lacking = _provider_and_traits(conn, uuid,
                                                      list(wanted))
    if provider['generation'] != generation:
        raise exceptions.ConcurrentUpdate(
            "Resource provider's generation already changed. Please update "
            "the generation and try again.")
    found = {t['name']: t for t in current + lacking if t['name'] in wanted}
    missing = [name for name in wanted if name not in found]
    if missing:
        raise exceptions.InvalidInput('No such trait %s' % ', '.join(missing))
    traits = sorted(found.values(), key=lambda trait: trait['id'])
    new_generation = _replace(conn, provider, current,
                              [t['id'] for t in traits])
    return traits, new_generation


def clear_provider_traits(conn, uuid):
    """Remove every trait from the provider."""
    provider, current, _ = _provider_and_traits(conn, uuid, [])
    _replace(conn, provider, current, [])
