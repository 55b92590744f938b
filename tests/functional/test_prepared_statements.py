"""The hot reads and nova's periodic writes on PostgreSQL: prepared once
per connection, reads outside a transaction (``storage.prepared``,
``Database.run``).

Each test runs on a pool of one connection, so that every request meets
the session the one before it prepared statements in.
"""

import logging
import os
import threading
import uuid as uuidlib

import pytest
import sqlalchemy as sa

from placement import inventory_rules
from placement.storage import allocations
from placement.storage import changes
from placement.storage import engine
from placement.storage import exceptions
from placement.storage import generations
from placement.storage import inventories
from placement.storage import postgresql
from placement.storage import prepared
from placement.storage import providers_core
from placement.storage import state_rows
from placement.storage import tables
from placement.storage import traits
from placement.storage import usages

pytestmark = pytest.mark.backends('postgresql')

NAMESPACE = uuidlib.UUID('6d0c2f4e-8a31-4f7b-9c55-0e2b7d1a9f43')
PROJECT = str(uuidlib.uuid5(NAMESPACE, 'project'))
USER = str(uuidlib.uuid5(NAMESPACE, 'user'))


def _uuid(name):
    return str(uuidlib.uuid5(NAMESPACE, name))


@pytest.fixture
def host(client):
    """A provider with inventory and two servers on it."""
    node = _uuid('node')
    client.post('/resource_providers', json={'name': 'node', 'uuid': node})
    client.put('/resource_providers/%s/inventories' % node, json={
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': 16},
                        'MEMORY_MB': {'total': 8192}}})
    for name in ('server-1', 'server-2'):
        client.put('/allocations/%s' % _uuid(name), json={
            'allocations': {node: {'resources': {'VCPU': 2,
                                                 'MEMORY_MB': 512}}},
            'project_id': PROJECT, 'user_id': USER,
            'consumer_generation': None, 'consumer_type': 'INSTANCE'})
    return node


def _prepared_names(db):
    return db.read(lambda conn: {row[0] for row in conn.exec_driver_sql(
        'SELECT name FROM pg_prepared_statements')})


def test_hot_reads_are_prepared_once_and_answer_as_unprepared(
        one_connection, host):
    db = one_connection
    first = db.read(allocations.for_provider, host)
    assert db.read(allocations.for_provider, host) == first
    assert allocations._FOR_PROVIDER.name in _prepared_names(db)
    unprepared = db.read(lambda conn: [
        dict(row._mapping) for row in conn.execute(
            allocations._FOR_PROVIDER.statement, {'uuid': host})])
    provider_id, generation, rows = first
    assert provider_id == unprepared[0]['id']
    assert generation == unprepared[0]['resource_provider_generation']
    assert rows == [{key: value for key, value in row.items()
                     if key not in ('id', 'resource_provider_generation')}
                    for row in unprepared]
    assert len(rows) == 4

    assert db.read(usages.for_project, PROJECT) == {'VCPU': 4,
                                                     'MEMORY_MB': 1024}
    assert db.read(usages.for_project_by_type, PROJECT) == {
        'INSTANCE': {'VCPU': 4, 'MEMORY_MB': 1024, 'consumer_count': 2}}
    consumer, held = db.read(allocations.for_consumer, _uuid('server-1'))
    assert consumer['project_id'] == PROJECT
    assert sorted((row['resource_class'], row['used']) for row in held) == [
        ('MEMORY_MB', 512), ('VCPU', 2)]
    with pytest.raises(exceptions.NotFound):
        db.read(allocations.for_provider, _uuid('nowhere'))


def test_the_state_catch_up_is_prepared_and_reads_as_unprepared(
        one_connection, host, client):
    """What every process reads after each write it learns of: where the
    log stands, what it logged since, and the rows of the providers it
    named; prepared, the same rows as the statements run as they are
    elsewhere."""
    db = one_connection
    provider_id = db.read(providers_core.get_by_uuid, host)['id']
    before = db.read(changes.current)
    client.put('/resource_providers/%s/traits' % host, version='1.6', json={
        'resource_provider_generation': 3, 'traits': ['HW_CPU_X86_AVX']})
    after = db.read(changes.current)
    assert changes._CURRENT.name in _prepared_names(db)
    assert db.read(changes.changed_between, before, after) == {provider_id}
    assert changes._PG_LOGGED_BETWEEN.name in _prepared_names(db)
    for rows in (state_rows._PROVIDERS, state_rows._USAGE,
                 state_rows._INVENTORIES, state_rows._PROVIDER_TRAITS,
                 state_rows._MEMBERSHIPS):
        found = db.read(lambda conn: sorted(
            tuple(row) for row in rows.of(conn, [provider_id])))
        assert rows.some_prepared.name in _prepared_names(db)
        expected = db.read(lambda conn: sorted(
            tuple(row) for row in conn.execute(rows.some,
                                               {'ids': [provider_id]})))
        assert found == expected
        assert found or rows is state_rows._MEMBERSHIPS


def test_a_percent_sign_in_a_statement_survives_preparing(one_connection):
    statement = prepared.Statement(sa.select(
        sa.literal_column("'100%'"), sa.bindparam('value', type_=sa.String)))
    row = one_connection.read(
        lambda conn: statement.execute(conn, {'value': '50%'}).one())
    assert tuple(row) == ('100%', '50%')


def test_a_statement_gone_from_its_session_is_retried_unprepared(
        one_connection, host, caplog):
    """What a pooler in transaction mode does to a prepared statement,
    done by hand: the read still answers, and the process stops
    preparing on that engine."""
    db = one_connection
    expected = db.read(allocations.for_provider, host)
    with db.engine.connect() as conn:
        conn.exec_driver_sql('DEALLOCATE ALL')
        conn.commit()
    try:
        with caplog.at_level(logging.WARNING, logger=prepared.__name__):
            assert db.read(allocations.for_provider, host) == expected
        assert 'no longer prepared' in caplog.text
        assert db.engine in prepared._REFUSED
        assert allocations._FOR_PROVIDER.name not in _prepared_names(db)
    finally:
        prepared._REFUSED.discard(db.engine)


def test_a_read_holds_no_transaction_open(one_connection, host, database_url):
    """Between two statements of a read, its session is idle rather than
    idle in a transaction: it holds no snapshot back from vacuum."""
    observer = sa.create_engine(database_url)

    def read(conn):
        pid = conn.exec_driver_sql('SELECT pg_backend_pid()').scalar()
        with observer.connect() as other:
            return other.exec_driver_sql(
                'SELECT state, xact_start FROM pg_stat_activity '
                'WHERE pid = %(pid)s', {'pid': pid}).one()

    try:
        state, started = one_connection.read(read)
    finally:
        observer.dispose()
    assert (state, started) == ('idle', None)


def test_a_write_after_a_read_on_the_same_session_still_rolls_back(
        one_connection, host):
    db = one_connection
    db.read(allocations.for_provider, host)

    def half_then_fail(conn):
        conn.execute(tables.projects.insert().values(external_id='half'))
        raise RuntimeError('failed midway')

    with pytest.raises(RuntimeError):
        db.write(half_then_fail)
    assert db.read(lambda conn: conn.execute(
        sa.select(sa.func.count()).select_from(tables.projects)
        .where(tables.projects.c.external_id == 'half')).scalar()) == 0


def test_a_session_killed_between_reads_is_replaced_and_prepares_anew(
        one_connection, host, database_url):
    db = one_connection
    expected = db.read(allocations.for_provider, host)
    killed = db.read(lambda conn: conn.exec_driver_sql(
        'SELECT pg_backend_pid()').scalar())
    observer = sa.create_engine(database_url)
    try:
        with observer.connect() as conn:
            assert conn.exec_driver_sql(
                'SELECT pg_terminate_backend(%(pid)s)',
                {'pid': killed}).scalar()
    finally:
        observer.dispose()
    assert db.read(allocations.for_provider, host) == expected
    assert db.read(lambda conn: conn.exec_driver_sql(
        'SELECT pg_backend_pid()').scalar()) != killed
    assert allocations._FOR_PROVIDER.name in _prepared_names(db)


def test_a_statement_without_parameters_is_prepared_and_run(one_connection):
    statement = prepared.Statement(sa.text('SELECT 41 + 1'))
    for _ in range(2):
        assert one_connection.read(
            lambda conn: statement.execute(conn).one())[0] == 42
    assert statement.name in _prepared_names(one_connection)


def test_a_prepared_update_says_how_many_rows_it_changed(one_connection,
                                                         host):
    statement = prepared.Statement(
        tables.resource_providers.update()
        .where(tables.resource_providers.c.uuid == sa.bindparam('uuid'))
        .values(name=sa.bindparam('name')))
    db = one_connection
    for uuid, changed in ((host, 1), (_uuid('nowhere'), 0)):
        result = db.write(lambda conn: statement.execute(
            conn, {'uuid': uuid, 'name': 'renamed'}))
        assert result.rowcount == changed
    assert statement.name in _prepared_names(db)


@pytest.fixture
def sql_sent_unprepared(one_connection):
    """The statements SQLAlchemy sends itself (prepared ones go past it)
    while the test runs."""
    sent = []

    def note(conn, cursor, statement, *args):
        sent.append(statement)

    sa.event.listen(one_connection.engine, 'before_cursor_execute', note)
    yield sent
    sa.event.remove(one_connection.engine, 'before_cursor_execute', note)


def _provider(db, uuid):
    return db.read(providers_core.get_by_uuid, uuid)


def test_nova_s_inventory_put_sends_only_prepared_statements(
        one_connection, host, sql_sent_unprepared, monkeypatch):
    """The PUT every nova-compute sends when its host changes (the whole
    inventory, one value new) is six statements, all prepared: the
    provider's classes come with its records, not from a lookup; its
    UPDATE goes with the change log's statement."""
    db = one_connection
    deferred = []
    defer = postgresql.defer
    monkeypatch.setattr(postgresql, 'defer', lambda conn, sql, args: (
        deferred.append(sql) or defer(conn, sql, args)))
    records = {name: dict(record, reserved=0)
               for name, record in db.read(
                   lambda conn: {
                       row['resource_class']: {
                           field: row[field]
                           for field in inventory_rules.FIELDS}
                       for row in inventories.for_provider_uuid(
                           conn, host)[1]}).items()}
    records['MEMORY_MB']['reserved'] = 512
    db.write(inventories.replace_all, _provider(db, host), records)
    assert sql_sent_unprepared == []
    assert [sql.split()[1] for sql in deferred] == [
        inventories._UPDATE.name]
    _, stored = db.read(inventories.for_provider_uuid, host)
    assert {row['resource_class']: row['reserved'] for row in stored} == {
        'VCPU': 0, 'MEMORY_MB': 512}
    assert {inventories._CURRENT.name, inventories._UPDATE.name,
            generations._BY_ID.name, changes._PG_ADVANCE_AND_LOG.name} <= (
        _prepared_names(db))


def test_an_inventory_put_naming_a_new_class_looks_it_up(
        one_connection, host, sql_sent_unprepared):
    db = one_connection
    db.write(inventories.replace_all, _provider(db, host), {
        'VCPU': {'total': 16, 'reserved': 0, 'min_unit': 1, 'max_unit': 16,
                 'step_size': 1, 'allocation_ratio': 1.0},
        'MEMORY_MB': {'total': 8192, 'reserved': 0, 'min_unit': 1,
                      'max_unit': 8192, 'step_size': 1,
                      'allocation_ratio': 1.0},
        'DISK_GB': {'total': 100, 'reserved': 0, 'min_unit': 1,
                    'max_unit': 100, 'step_size': 1,
                    'allocation_ratio': 1.0}})
    assert len(sql_sent_unprepared) == 2    # the lookup, the insert
    _, stored = db.read(inventories.for_provider_uuid, host)
    assert sorted(row['resource_class'] for row in stored) == [
        'DISK_GB', 'MEMORY_MB', 'VCPU']
    with pytest.raises(inventories.ResourceClassNotFound):
        db.write(inventories.replace_all, _provider(db, host),
                 {'CUSTOM_UNKNOWN': {'total': 1}})


def test_a_traits_put_that_drops_or_adds_one_reads_only_what_is_new(
        one_connection, host, sql_sent_unprepared, monkeypatch):
    """nova's toggle of COMPUTE_STATUS_DISABLED sends only prepared
    statements: the provider and its traits, a lookup of the one name
    when adding it (none when removing it), the change with the change
    log."""
    db = one_connection
    run = []
    execute = prepared.Statement.execute

    def noted_execute(statement, *args, **kwargs):
        run.append(statement.name)
        return execute(statement, *args, **kwargs)
    monkeypatch.setattr(prepared.Statement, 'execute', noted_execute)
    base = ['COMPUTE_NODE', 'HW_CPU_X86_SSE42']
    generation = _provider(db, host)['generation']
    read, lookup, change = (traits._PG_PROVIDER_AND_TRAITS.name,
                            traits._PG_NAMED.name,
                            traits._PG_BUMP_AND_SET.name)
    for names, statements in (
            (base, [read, lookup, change]),
            (base + ['COMPUTE_STATUS_DISABLED'], [read, lookup, change]),
            (base, [read, change])):
        run.clear()
        sql_sent_unprepared.clear()
        stored, generation = db.write(traits.set_provider_traits, host,
                                      names, generation)
        assert sorted(t['name'] for t in stored) == sorted(names)
        assert run == statements + [changes._PG_ADVANCE_AND_LOG.name]
        assert sql_sent_unprepared == []
        assert sorted(t['name'] for t in db.read(
            traits.provider_traits, host)[1]) == sorted(names)
    with pytest.raises(exceptions.InvalidInput):
        db.write(traits.set_provider_traits, host, base + ['CUSTOM_NONE'],
                 generation)
    with pytest.raises(exceptions.ConcurrentUpdate):
        db.write(traits.set_provider_traits, host, base + [
            'COMPUTE_STATUS_DISABLED'], generation - 1)


def test_a_traits_write_waits_for_another_writer_then_sees_its_generation(
        one_connection, host, database_url):
    """The read locks the provider's row (so the change can go unread
    with the change log): a second writer at the same generation waits
    for the first to commit, then is refused, and changes nothing."""
    first = one_connection
    second = engine.Database(engine.create_engine(database_url))
    generation = _provider(first, host)['generation']
    holding, release = threading.Event(), threading.Event()
    outcome = []

    def held_write(conn):
        answer = traits.set_provider_traits(conn, host, ['COMPUTE_NODE'],
                                            generation)
        holding.set()
        assert release.wait(30)
        return answer

    def second_write():
        try:
            second.write(traits.set_provider_traits, host,
                         ['HW_CPU_X86_SSE42'], generation)
        except exceptions.ConcurrentUpdate as error:
            outcome.append(error)

    holder = threading.Thread(target=first.write, args=(held_write,))
    holder.start()
    waiter = threading.Thread(target=second_write)
    try:
        assert holding.wait(30)
        waiter.start()
        waiter.join(1)
        assert waiter.is_alive()        # waiting for the row
    finally:
        release.set()
        holder.join(30)
        waiter.join(30)
        second.dispose()
    assert len(outcome) == 1
    assert [t['name'] for t in first.read(
        traits.provider_traits, host)[1]] == ['COMPUTE_NODE']
    assert _provider(first, host)['generation'] == generation + 1


def test_the_freshness_check_is_prepared_and_gives_up_a_lost_one(
        one_connection, caplog):
    """The one statement every answer from memory sends first: prepared
    on each session; lost from it (a pooler), that check says it could
    not tell (its caller then reads in a transaction) and the process
    stops preparing."""
    db = one_connection
    position = changes.summary_outside_transaction(db)
    assert position is not None
    assert changes.summary_outside_transaction(db) == position
    assert changes._SUMMARY.name in _peek_prepared_names(db)
    _deallocate_on_peek_sessions(db)
    try:
        with caplog.at_level(logging.WARNING, logger=prepared.__name__):
            assert changes.summary_outside_transaction(db) is None
        assert 'no longer prepared' in caplog.text
        assert changes.summary_outside_transaction(db) == position
        assert changes._SUMMARY.name not in _peek_prepared_names(db)
    finally:
        prepared._REFUSED.discard(db.engine)


def _peek_prepared_names(db):
    """The names prepared on the session ``peek`` uses."""
    names = db.peek(prepared.Plain(
        'SELECT array_agg(name) FROM pg_prepared_statements'))[0]
    return set(names or ())


def _deallocate_on_peek_sessions(db):
    """What a pooler in transaction mode does to the sessions ``peek``
    keeps, done by hand."""
    own = db._peeking.take(db.engine)
    with own.dbapi_connection.cursor() as cursor:
        cursor.execute('DEALLOCATE ALL')
    db._peeking.give(own, healthy=True)


def _peek_backends(db, database_url):
    """The server sessions of ``db``'s process that are not its pool's:
    those ``peek`` keeps."""
    observer = sa.create_engine(database_url)
    try:
        with observer.connect() as conn:
            mine = db.read(lambda c: c.exec_driver_sql(
                'SELECT pg_backend_pid()').scalar())
            return {row[0] for row in conn.exec_driver_sql(
                'SELECT pid FROM pg_stat_activity WHERE datname = '
                'current_database() AND pid <> pg_backend_pid() '
                'AND pid <> %(mine)s', {'mine': mine})}
    finally:
        observer.dispose()


def test_the_freshness_check_keeps_at_most_its_sessions(one_connection,
                                                        database_url):
    """Threads asking at once share PEEK_SESSIONS sessions outside the
    pool, and past them use the pool; ``dispose`` closes them."""
    db = one_connection
    barrier = threading.Barrier(6)
    answers = []

    def ask():
        barrier.wait()
        for _ in range(20):
            answers.append(changes.summary_outside_transaction(db))
    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 120 and None not in answers
    assert len(set(answers)) == 1
    assert 1 <= len(_peek_backends(db, database_url)) <= \
        engine.PEEK_SESSIONS
    db.dispose()
    assert _peek_backends(db, database_url) == set()
    assert changes.summary_outside_transaction(db) == answers[0]


def test_a_peek_session_killed_is_replaced(one_connection, database_url):
    """The server ends the session ``peek`` keeps (a restart, an idle
    timeout): that check says it could not tell, the session is dropped,
    and the next check opens another."""
    db = one_connection
    position = changes.summary_outside_transaction(db)
    killed = _peek_backends(db, database_url)
    assert len(killed) == 1
    observer = sa.create_engine(database_url)
    try:
        with observer.connect() as conn:
            conn.exec_driver_sql('SELECT pg_terminate_backend(%(pid)s)',
                                 {'pid': killed.pop()})
    finally:
        observer.dispose()
    assert changes.summary_outside_transaction(db) is None
    assert changes.summary_outside_transaction(db) == position
    assert len(_peek_backends(db, database_url)) == 1


def test_writes_still_run_where_nothing_is_prepared(one_connection, host):
    """Behind a pooler in transaction mode (preparing stopped) the write
    path's statements, arrays included, run as they are."""
    db = one_connection
    prepared.refuse(db.engine)
    try:
        before = changes.summary_outside_transaction(db)
        _, generation = db.write(
            traits.set_provider_traits, host,
            ['COMPUTE_NODE', 'HW_CPU_X86_SSE42'],
            _provider(db, host)['generation'])
        db.write(traits.set_provider_traits, host, ['COMPUTE_NODE'],
                 generation)
        assert [t['name'] for t in db.read(
            traits.provider_traits, host)[1]] == ['COMPUTE_NODE']
        assert changes.summary_outside_transaction(db)[0] == before[0] + 2
        assert _prepared_names(db) == set()
    finally:
        prepared._REFUSED.discard(db.engine)


def test_a_forked_child_opens_its_own_peek_session(one_connection,
                                                   database_url):
    """A child forked after its parent opened a session for ``peek``
    leaves that one to the parent, and both keep answering."""
    db = one_connection
    position = changes.summary_outside_transaction(db)
    parents = _peek_backends(db, database_url)
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:      # pragma: no cover (the child reports by exit code)
        try:
            own = db.peek(prepared.Plain('SELECT pg_backend_pid()'))[0]
            answer = changes.summary_outside_transaction(db)
            os.write(writing, b'%d' % own)
            os._exit(0 if answer == position and own not in parents
                     else 1)
        finally:
            os._exit(2)
    os.close(writing)
    _pid, status = os.waitpid(child, 0)
    seen = os.read(reading, 64)
    os.close(reading)
    assert os.waitstatus_to_exitcode(status) == 0, seen
    assert changes.summary_outside_transaction(db) == position
    assert _peek_backends(db, database_url) >= parents


def _checkouts(db):
    """A list that grows by one at each checkout from ``db``'s pool."""
    seen = []
    sa.event.listen(db.engine.pool, 'checkout',
                    lambda *_args: seen.append(1))
    return seen


def test_a_consumer_s_allocations_are_read_past_the_pool(client, db, host):
    """``GET /allocations/{consumer}``, asked for every server all day,
    is one prepared statement on a session kept outside the pool: the
    same answer as a read in the pool, with no checkout."""
    server = _uuid('server-1')
    in_pool = db.read(allocations.for_consumer, server)
    db.peek(prepared.Plain('SELECT 1'))     # its session opened
    checkouts = _checkouts(db)
    for _ in range(3):
        body = client.get('/allocations/%s' % server, version='1.38').json
    assert checkouts == []
    assert body['consumer_generation'] == in_pool[0]['generation']
    assert body['allocations'] == {host: {
        'generation': in_pool[1][0]['resource_provider_generation'],
        'resources': {row['resource_class']: row['used']
                      for row in in_pool[1]}}}
    assert allocations._FOR_CONSUMER.name in _peek_prepared_names(db)
    assert allocations.read_for_consumer(db, _uuid('nobody')) == (None, [])


def test_a_consumer_s_allocations_lost_from_their_session_read_in_the_pool(
        one_connection, host, caplog):
    """The statement lost from the kept session (a pooler): the read is
    made again in the pool, the same, and preparing stops."""
    db = one_connection
    expected = db.read(allocations.for_consumer, _uuid('server-2'))
    assert allocations.read_for_consumer(db, _uuid('server-2')) == expected
    _deallocate_on_peek_sessions(db)
    checkouts = _checkouts(db)
    try:
        with caplog.at_level(logging.WARNING, logger=prepared.__name__):
            assert allocations.read_for_consumer(
                db, _uuid('server-2')) == expected
        assert 'no longer prepared' in caplog.text
        assert len(checkouts) == 1
        assert allocations.read_for_consumer(
            db, _uuid('server-2')) == expected
    finally:
        prepared._REFUSED.discard(db.engine)
