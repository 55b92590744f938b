"""Traits: the catalogue (standard and custom) and the traits of providers.

Lists come back ordered by trait id: standard traits (synced first) before
custom ones, custom ones in the order they were created, the same on
every backend.
"""

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc

from placement.storage import changes
from placement.storage import exceptions
from placement.storage import generations
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
_NAMED = (sa.select(*_COLUMNS)
          .where(TRAIT.c.name.in_(sa.bindparam('names', expanding=True)))
          .order_by(TRAIT.c.id))


def _provider_and_traits_statement(lock):
    """The provider ``uuid`` and its traits, one row per trait (or one
    with none); ``lock``: the provider's row is locked until the
    transaction ends."""
    statement = (
        sa.select(RP.c.id.label('provider_id'), RP.c.generation, *_COLUMNS)
        .select_from(RP.outerjoin(
            RP_TRAIT, RP_TRAIT.c.resource_provider_id == RP.c.id)
            .outerjoin(TRAIT, TRAIT.c.id == RP_TRAIT.c.trait_id))
        .where(RP.c.uuid == sa.bindparam('uuid'))
        .order_by(TRAIT.c.id))
    if lock:
        statement = statement.with_for_update(of=RP)
    return prepared.Statement(statement)


# A write of a provider's traits reads the provider and its traits in
# one statement (prepared: nova's resource trackers send it), and looks
# up only the names the provider does not have (``_named``).  On
# PostgreSQL that read locks the provider's row, so that the generation
# read is the one the change will bump (``_replace``).
_PROVIDER_AND_TRAITS = _provider_and_traits_statement(lock=False)
_PG_PROVIDER_AND_TRAITS = _provider_and_traits_statement(lock=True)


def _provider_and_traits(conn, uuid):
    """(the provider's id and generation, its traits as dicts); NotFound
    names the uuid."""
    statement = (_PG_PROVIDER_AND_TRAITS
                 if conn.dialect.name == 'postgresql'
                 else _PROVIDER_AND_TRAITS)
    rows = statement.execute(conn, {'uuid': uuid}).all()
    if not rows:
        raise providers_core.not_found(uuid)
    provider = {'id': rows[0].provider_id, 'generation': rows[0].generation}
    names = [column.name for column in _COLUMNS]
    return provider, [dict(zip(names, row[2:]))
                      for row in rows if row.id is not None]


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
        generations.recorded(conn, provider['id'])
        return provider['generation'] + 1
    try:
        generation = generations.bump(conn, provider['id'],
                                      provider['generation'])
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
_BUMPED = generations.bumping(RP.c.id == sa.bindparam('provider'))
_PG_BUMP_AND_SET = prepared.Statement(
    sa.select(sa.func.count()).select_from(_BUMPED)
    .add_cte(RP_TRAIT.delete().where(
        RP_TRAIT.c.resource_provider_id.in_(sa.select(_BUMPED.c.id)),
        RP_TRAIT.c.trait_id == sa.any_(sa.cast(
            sa.bindparam('remove'), sa.ARRAY(sa.Integer))))
        .cte('removed'))
    .add_cte(RP_TRAIT.insert().from_select(
        ['resource_provider_id', 'trait_id', 'created_at'],
        sa.select(_BUMPED.c.id,
                  sa.func.unnest(sa.cast(sa.bindparam('add'),
                                         sa.ARRAY(sa.Integer))),
                  sa.bindparam('now', type_=RP_TRAIT.c.created_at.type)))
        .cte('added')))
# The names a PUT adds, looked up on PostgreSQL as one array.
_PG_NAMED = prepared.Statement(
    sa.select(*_COLUMNS)
    .where(TRAIT.c.name == sa.func.any(sa.cast(
        sa.bindparam('names'), sa.ARRAY(sa.String))))
    .order_by(TRAIT.c.id))


def _named(conn, names):
    if conn.dialect.name == 'postgresql':
        return [row._asdict()
                for row in _PG_NAMED.execute(conn, {'names': names})]
    return _as_dicts(conn.execute(_NAMED, {'names': names}))


def set_provider_traits(conn, uuid, names, generation):
    """Replace the provider's traits with ``names``.

    ``generation`` is the one the caller saw; a mismatch is a
    ConcurrentUpdate.  Unknown names are InvalidInput.  Returns (the
    provider's traits as dicts, its new generation).
    """
    provider, current = _provider_and_traits(conn, uuid)
    if provider['generation'] != generation:
        raise exceptions.ConcurrentUpdate(
            "Resource provider's generation already changed. Please update "
            "the generation and try again.")
    wanted = dict.fromkeys(names)
    # The provider's own traits need no lookup: nova sends them all back
    # with one added or removed.
    found = {t['name']: t for t in current if t['name'] in wanted}
    unread = sorted(name for name in wanted if name not in found)
    if unread:
        found.update((t['name'], t) for t in _named(conn, unread))
    missing = [name for name in wanted if name not in found]
    if missing:
        raise exceptions.InvalidInput('No such trait %s' % ', '.join(missing))
    traits = sorted(found.values(), key=lambda trait: trait['id'])
    new_generation = _replace(conn, provider, current,
                              [t['id'] for t in traits])
    return traits, new_generation


def clear_provider_traits(conn, uuid):
    """Remove every trait from the provider."""
    provider, current = _provider_and_traits(conn, uuid)
    _replace(conn, provider, current, [])
