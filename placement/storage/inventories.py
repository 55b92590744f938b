"""A provider's inventory: one record per resource class it offers.

Every change is a compare-and-swap on the provider's generation (taken
before any row is written, so concurrent writers to one provider queue on
its row and the loser gets ConcurrentUpdate), and refuses to remove a class
that allocations still consume.  Shrinking a class below what is already
allocated is allowed, as upstream allows it: the caller is told which
classes are now over capacity.

A record is a dict with ``total``, ``reserved``, ``min_unit``,
``max_unit``, ``step_size`` and ``allocation_ratio``.
"""

import collections

import sqlalchemy as sa

from placement import error_codes
from placement import inventory_rules
from placement.storage import changes
from placement.storage import exceptions
from placement.storage import prepared
from placement.storage import providers_core
from placement.storage import resource_classes
from placement.storage import tables
from placement.storage.tables import ALLOC, INV, INV_WITH_CLASS, RC, RP

# A record's columns, for the statements that read records.
FIELD_COLUMNS = tuple(INV.c[field] for field in inventory_rules.FIELDS)


class ResourceClassNotFound(exceptions.NotFound):
    """The inventory names a resource class that does not exist."""


class InventoryNotFound(exceptions.NotFound):
    """The provider has no inventory of that class."""


class InventoryExists(exceptions.Conflict):
    """The provider already has inventory of that class."""
    code = error_codes.CONCURRENT_UPDATE


class GenerationConflict(exceptions.ConcurrentUpdate):
    """The provider is not at the generation the caller based its write
    on."""


class InventoryInUse(exceptions.Conflict):
    """Allocations consume inventory that the write would remove."""
    code = error_codes.INVENTORY_INUSE


# A record as it is read: its class's name, its fields and timestamps.
_RECORD_COLUMNS = (RC.c.name.label('resource_class'),
                   *FIELD_COLUMNS,
                   INV.c.created_at, INV.c.updated_at)
# Built once, the provider with its records in one statement: its
# generation and the records are of one moment, at one round trip.
_FOR_PROVIDER_UUID = prepared.Statement(
    sa.select(RP.c.generation, *_RECORD_COLUMNS)
    .select_from(RP.outerjoin(
        INV_WITH_CLASS, INV.c.resource_provider_id == RP.c.id))
    .where(RP.c.uuid == sa.bindparam('uuid'))
    .order_by(INV.c.resource_class_id))


def for_provider_uuid(conn, uuid):
    """(the generation of the provider ``uuid``, its records as
    ``list_for_provider`` gives them); NotFound if there is none."""
    return providers_core.generation_and_rows(conn, _FOR_PROVIDER_UUID,
                                              uuid)


def list_for_provider(conn, provider_id):
    """The provider's records, each with its ``resource_class`` name and
    timestamps, in resource class id order."""
    rows = conn.execute(
        sa.select(*_RECORD_COLUMNS).select_from(INV_WITH_CLASS)
        .where(INV.c.resource_provider_id == provider_id)
        .order_by(INV.c.resource_class_id))
    return [dict(row._mapping) for row in rows]


def _class_ids(conn, names):
    """{name: id} for ``names``; ResourceClassNotFound for the first
    unknown one."""
    ids = resource_classes.ids_by_name(conn, names)
    for name in names:
        if name not in ids:
            raise ResourceClassNotFound('No such resource class %s.' % name)
    return ids


# What a write needs to know of the provider's inventory, in one
# statement built once and prepared: each current record with its class
# name, and what is allocated of it (sum and count).
def _held(provider_id):
    return (sa.select(ALLOC.c.resource_class_id,
                      sa.func.sum(ALLOC.c.used).label('used'),
                      sa.func.count().label('allocations'))
            .where(ALLOC.c.resource_provider_id == provider_id)
            .group_by(ALLOC.c.resource_class_id).subquery())


def _with_held(held):
    """The columns of a current record, its allocations from ``held``."""
    return (INV.c.resource_class_id, RC.c.name, *FIELD_COLUMNS,
            sa.func.coalesce(held.c.used, 0).label('used'),
            sa.func.coalesce(held.c.allocations, 0).label('allocations'))


_HELD = _held(sa.bindparam('provider'))
_CURRENT = prepared.Statement(
    sa.select(*_with_held(_HELD))
    .select_from(INV_WITH_CLASS.outerjoin(
        _HELD, _HELD.c.resource_class_id == INV.c.resource_class_id))
    .where(INV.c.resource_provider_id == sa.bindparam('provider'))
    .order_by(INV.c.resource_class_id))
# The same by the provider's uuid, with its id and generation first (and
# the record's columns None where it has none): nova's PUT of a
# provider's inventory reads both at once.
_HELD_BY_UUID = _held(sa.select(RP.c.id).where(
    RP.c.uuid == sa.bindparam('uuid')).scalar_subquery())
_PROVIDER_AND_CURRENT = prepared.Statement(
    sa.select(RP.c.id.label('provider_id'),
              RP.c.generation.label('provider_generation'),
              *_with_held(_HELD_BY_UUID))
    .select_from(RP.outerjoin(
        INV_WITH_CLASS, INV.c.resource_provider_id == RP.c.id)
        .outerjoin(_HELD_BY_UUID,
                   _HELD_BY_UUID.c.resource_class_id
                   == INV.c.resource_class_id))
    .where(RP.c.uuid == sa.bindparam('uuid'))
    .order_by(INV.c.resource_class_id))
# On PostgreSQL the same statement also bumps the generation, when it is
# still the one the client sent, in a CTE (this write always bumps, and
# a PUT refused later rolls back): a round trip fewer for nova's PUT.
# The rows are as of the statement's start; ``bumped`` is None when the
# bump found the provider at another generation by then.
_BUMPED = (RP.update()
           .where(RP.c.uuid == sa.bindparam('uuid'),
                  RP.c.generation == sa.bindparam('expected'))
           .values(generation=RP.c.generation + 1,
                   updated_at=sa.bindparam('now'))
           .returning(RP.c.id, RP.c.generation)
           .cte('bumped'))
_PG_BUMP_AND_CURRENT = prepared.Statement(
    sa.select(RP.c.id.label('provider_id'),
              RP.c.generation.label('provider_generation'),
              _BUMPED.c.generation.label('bumped'),
              *_with_held(_HELD_BY_UUID))
    .select_from(RP.outerjoin(_BUMPED, _BUMPED.c.id == RP.c.id)
                 .outerjoin(INV_WITH_CLASS,
                            INV.c.resource_provider_id == RP.c.id)
                 .outerjoin(_HELD_BY_UUID,
                            _HELD_BY_UUID.c.resource_class_id
                            == INV.c.resource_class_id))
    .where(RP.c.uuid == sa.bindparam('uuid'))
    .order_by(INV.c.resource_class_id))


def _current(conn, provider_id):
    """{resource class id: its current record, with ``name``, ``used``
    and ``allocations`` (how many) besides the fields}, in class id
    order."""
    return {row.resource_class_id: row._asdict()
            for row in _CURRENT.execute(conn, {'provider': provider_id})}


def _provider_and_current(conn, uuid):
    """(the provider ``uuid`` with its id and generation, ``_current`` of
    it); NotFound names the uuid."""
    return _split(uuid, _PROVIDER_AND_CURRENT.execute(
        conn, {'uuid': uuid}).all())


def _split(uuid, rows):
    """``_provider_and_current`` of the rows its statement (or
    ``_PG_BUMP_AND_CURRENT``) read."""
    if not rows:
        raise providers_core.not_found(uuid)
    provider = {'id': rows[0].provider_id, 'uuid': uuid,
                'generation': rows[0].provider_generation}
    return provider, {row.resource_class_id: _record_of(row)
                      for row in rows if row.resource_class_id is not None}


def _record_of(row):
    record = row._asdict()
    del record['provider_id'], record['provider_generation']
    record.pop('bumped', None)
    return record


def _current_and_ids(conn, provider_id, names):
    """(``_current``, ``_ids``)."""
    current = _current(conn, provider_id)
    return current, _ids(conn, current, names)


def _ids(conn, current, names):
    """{name: id} for ``names``: the ids of classes the provider already
    has come with its records (``current``), so a write that names only
    those (nova's, which sends the whole inventory) looks up nothing
    more; ResourceClassNotFound for the first unknown name."""
    ids = {record['name']: class_id for class_id, record in current.items()
           if record['name'] in names}
    if len(ids) < len(names):
        ids.update(_class_ids(conn, [name for name in names
                                     if name not in ids]))
    return ids


def _refuse_if_in_use(provider, current, class_ids):
    """InventoryInUse naming every class of ``class_ids`` (being removed)
    that is allocated, in class id order."""
    in_use = [current[class_id]['name'] for class_id in sorted(class_ids)
              if current[class_id]['allocations']]
    if in_use:
        raise InventoryInUse(
            "Inventory for '%s' on resource provider '%s' in use."
            % (', '.join(in_use), provider['uuid']))


# A class a write leaves allocated beyond its capacity.
Excess = collections.namedtuple('Excess', 'resource_class used capacity')


def _excess(name, current, record):
    """Excess of ``record`` against what ``current`` has allocated, or
    None."""
    used = int(current['used'])
    limit = inventory_rules.capacity_of(record)
    return Excess(name, used, limit) if used > limit else None


def _values(record):
    return {field: record[field] for field in inventory_rules.FIELDS}


def _insert(conn, provider_id, class_id, record):
    conn.execute(INV.insert().values(
        resource_provider_id=provider_id, resource_class_id=class_id,
        created_at=tables.utcnow(), **_values(record)))


_UPDATE = prepared.Statement(
    INV.update()
    .where(INV.c.resource_provider_id == sa.bindparam('provider'),
           INV.c.resource_class_id == sa.bindparam('class_id'))
    .values(updated_at=sa.bindparam('now'),
            **{field: sa.bindparam('new_' + field)
               for field in inventory_rules.FIELDS}))


def _update(conn, provider_id, class_id, record):
    """Every write goes on to the change log's statement, which on
    PostgreSQL carries this one (nothing of it is read): a round trip
    fewer for nova's PUT, which changes one class."""
    _UPDATE.execute(conn, {
        'provider': provider_id, 'class_id': class_id,
        'now': tables.utcnow(),
        **{'new_' + field: record[field]
           for field in inventory_rules.FIELDS}}, defer=True)


def _changed(current, record):
    return any(current[field] != record[field]
               for field in inventory_rules.FIELDS)


def _bump(conn, provider):
    return providers_core.increment_generation(
        conn, provider['id'], provider['generation'])


def create(conn, provider, resource_class, record):
    """Add the first record of ``resource_class``; the new generation.

    ``provider`` is a dict with ``id``, ``uuid`` and the ``generation``
    the change is based on.
    """
    class_id = _class_ids(conn, [resource_class])[resource_class]
    if class_id in _current(conn, provider['id']):
        raise InventoryExists(
            'Inventory for %s already exists on resource provider %s.'
            % (resource_class, provider['uuid']))
    generation = _bump(conn, provider)
    _insert(conn, provider['id'], class_id, record)
    return generation


def update(conn, provider, resource_class, record):
    """Change the existing record of ``resource_class``.

    Returns (new generation, [Excess] when allocations now exceed
    capacity).
    """
    current, ids = _current_and_ids(conn, provider['id'], [resource_class])
    class_id = ids[resource_class]
    if class_id not in current:
        raise InventoryNotFound(
            'No inventory of class %s found.' % resource_class)
    excess = _excess(resource_class, current[class_id], record)
    generation = _bump(conn, provider)
    _update(conn, provider['id'], class_id, record)
    return generation, [excess] if excess else []


def delete(conn, provider, resource_class):
    """Remove the record of ``resource_class``; the new generation."""
    current, ids = _current_and_ids(conn, provider['id'], [resource_class])
    class_id = ids[resource_class]
    if class_id not in current:
        raise InventoryNotFound(
            'No inventory of class %s found for delete' % resource_class)
    _refuse_if_in_use(provider, current, [class_id])
    generation = _bump(conn, provider)
    conn.execute(INV.delete().where(
        INV.c.resource_provider_id == provider['id'],
        INV.c.resource_class_id == class_id))
    return generation


def replace_all(conn, provider, records):
    """Make ``records`` ({class name: record}) the whole inventory.

    Classes not named are removed (refused if allocated), the others added
    or updated.  Returns (new generation, [Excess] of the updated classes
    whose allocations now exceed capacity).
    """
    return _replace_all(conn, provider, _current(conn, provider['id']),
                        records)


# What the generation column (INTEGER) holds: a client's generation
# outside it matches no provider, and is no statement's parameter.
_GENERATIONS = (-2 ** 31, 2 ** 31 - 1)


def replace_all_at(conn, uuid, generation, records):
    """``replace_all`` on the provider ``uuid`` if it is at
    ``generation`` (GenerationConflict if not; NotFound if there is no
    such provider), reading the provider and its records in one
    statement (on PostgreSQL the one that bumps the generation too)."""
    if conn.dialect.name == 'postgresql' and (
            _GENERATIONS[0] <= generation <= _GENERATIONS[1]):
        return _bumped_and_replaced(conn, uuid, generation, records)
    provider, current = _provider_and_current(conn, uuid)
    if provider['generation'] != generation:
        raise GenerationConflict('resource provider generation conflict')
    return _replace_all(conn, provider, current, records)


def _bumped_and_replaced(conn, uuid, generation, records):
    """``replace_all_at`` on PostgreSQL, with ``_PG_BUMP_AND_CURRENT``:
    the errors are the same as when the bump comes later."""
    rows = _PG_BUMP_AND_CURRENT.execute(conn, {
        'uuid': uuid, 'expected': generation,
        'now': tables.utcnow()}).all()
    provider, current = _split(uuid, rows)
    if provider['generation'] != generation:
        raise GenerationConflict('resource provider generation conflict')
    if rows[0].bumped is None:  # changed since the statement began
        raise exceptions.ConcurrentUpdate(
            'resource provider generation conflict')
    changes.touch(conn, provider['id'])
    return _replace_all(conn, provider, current, records, bumped=True)


def _replace_all(conn, provider, current, records, bumped=False):
    ids = _ids(conn, current, list(records))
    wanted = {ids[name]: name for name in records}
    removed = [class_id for class_id in current if class_id not in wanted]
    _refuse_if_in_use(provider, current, removed)
    over = [excess for excess in (
        _excess(name, current[class_id], records[name])
        for class_id, name in wanted.items() if class_id in current)
        if excess]
    generation = (provider['generation'] + 1 if bumped
                  else _bump(conn, provider))
    if removed:
        conn.execute(INV.delete().where(
            INV.c.resource_provider_id == provider['id'],
            INV.c.resource_class_id.in_(sorted(removed))))
    # A record sent as it is stored is left alone: nova sends the whole
    # inventory when one class changed, and each UPDATE is a statement.
    for class_id, name in wanted.items():
        if class_id not in current:
            _insert(conn, provider['id'], class_id, records[name])
        elif _changed(current[class_id], records[name]):
            _update(conn, provider['id'], class_id, records[name])
    return generation, over
