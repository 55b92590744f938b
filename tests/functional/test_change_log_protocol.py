"""A process meeting a change-log protocol newer than its own.

A release that changes how writes are logged raises the protocol the
stamp rows carry (see ``placement.storage.changes``).  A process still
running this code must then stop trusting the log: it reads the tables
again before every answer it would give from memory, fails its health
check so that a balancer drains it, and says why in its log, once.

What such a newer writer looks like to this code is simulated by a
write the log does not record: made on this service's own connection
(so that the triggers for foreign writes stay quiet) and committed
without the change log's last statement.
"""

import logging
import os
import socket

import sqlalchemy as sa

from placement.cmd import status
from placement.storage import changes
from placement.storage import engine
from placement.storage import tables

RP_UUID = '7f3e4a10-0000-4000-8000-000000000001'
CONSUMER = '7f3e4a10-0000-4000-8000-0000000000c1'
PROTOCOL_WARNING = 'change log follows protocol'


def _unlogged(database_url, statement):
    """Commit ``statement`` so that the change log does not record it."""
    db = engine.Database(engine.create_engine(database_url))
    try:
        with db.engine.begin() as conn:
            own = conn.dialect.name == 'sqlite'
            if own:     # what marks this service's writes there
                conn.exec_driver_sql('UPDATE placement_change_stamp SET '
                                     'own_write = 1 WHERE id = 1')
            conn.execute(statement)
            if own:
                conn.exec_driver_sql('UPDATE placement_change_stamp SET '
                                     'own_write = 0 WHERE id = 1')
    finally:
        db.dispose()


def _set_total(database_url, total):
    _unlogged(database_url, tables.inventories.update().values(total=total))


def _raise_protocol(foreign, protocol):
    with foreign.begin() as conn:
        conn.execute(tables.change_stamp.update().values(protocol=protocol))


def _provider(client, total):
    client.post('/resource_providers', json={'name': 'cn',
                                             'uuid': RP_UUID})
    client.put('/resource_providers/%s/inventories' % RP_UUID, json={
        'resource_provider_generation': 0,
        'inventories': {'VCPU': {'total': total}}})


def _capacity(client):
    """VCPU capacity as allocation candidates (from memory) see it."""
    body = client.get('/allocation_candidates?resources=VCPU:1').json
    summaries = body['provider_summaries']
    return summaries[RP_UUID]['resources']['VCPU']['capacity'] \
        if summaries else None


def _listed_with_room(client, amount):
    """Whether a listing filtered by free VCPU (from memory) names it."""
    return [rp['uuid'] for rp in client.get(
        '/resource_providers?resources=VCPU:%d' % amount).json[
            'resource_providers']] == [RP_UUID]


def test_an_unlogged_write_goes_unseen_while_the_protocol_is_ours(
        client, database_url):
    """The control: what makes the guard necessary."""
    _provider(client, 8)
    assert _capacity(client) == 8
    _set_total(database_url, 16)
    assert _capacity(client) == 8


def test_a_newer_protocol_makes_every_answer_read_the_tables(
        client, database_url, foreign, caplog):
    _provider(client, 8)
    assert _capacity(client) == 8
    client.get('/healthcheck', status=200)
    _raise_protocol(foreign, changes.PROTOCOL + 1)
    caplog.set_level(logging.WARNING)
    for total in (16, 4, 32):
        _set_total(database_url, total)
        assert _capacity(client) == total
        assert _listed_with_room(client, 20) == (total >= 20)
    warnings = [record for record in caplog.records
                if PROTOCOL_WARNING in record.getMessage()]
    assert len(warnings) == 1
    assert 'protocol %d, this process follows %d' % (
        changes.PROTOCOL + 1, changes.PROTOCOL) in warnings[0].getMessage()
    response = client.get('/healthcheck', status=503)
    assert 'change log protocol mismatch' in response.text

    # The protocol back to ours (the release rolled back): the log is
    # trusted again, and the process healthy.
    _raise_protocol(foreign, changes.PROTOCOL)
    assert _capacity(client) == 32
    client.get('/healthcheck', status=200)
    _set_total(database_url, 8)
    assert _capacity(client) == 32


def test_project_usages_are_read_again_under_a_newer_protocol(
        client, database_url, foreign):
    _provider(client, 8)
    client.put('/allocations/%s' % CONSUMER, json={
        'allocations': {RP_UUID: {'resources': {'VCPU': 2}}},
        'project_id': 'p', 'user_id': 'u', 'consumer_generation': None,
        'consumer_type': 'INSTANCE'}, status=204)

    def usage():
        return client.get('/usages?project_id=p', version='1.37').json[
            'usages']

    assert usage() == {'VCPU': 2}
    _raise_protocol(foreign, changes.PROTOCOL + 1)
    _unlogged(database_url, tables.allocations.update().values(used=5))
    assert usage() == {'VCPU': 5}


def test_a_process_that_reads_the_log_records_its_protocol(client,
                                                           foreign):
    _provider(client, 8)
    _capacity(client)
    with foreign.connect() as conn:
        rows = conn.execute(sa.select(
            tables.api_processes.c.host, tables.api_processes.c.pid,
            tables.api_processes.c.protocol)).all()
    assert [tuple(row) for row in rows] == [
        (socket.gethostname(), os.getpid(), changes.PROTOCOL)]


def test_the_newer_release_upgrade_check_names_processes_behind(
        client, config_file, foreign, monkeypatch, capsys):
    """What the next release's ``placement-status`` says while this
    release's processes still serve its database."""
    _provider(client, 8)
    _capacity(client)
    argv = ['--config-file', config_file, 'upgrade', 'check', '--json']
    assert status.main(argv) == status.SUCCESS
    capsys.readouterr()

    newer = changes.PROTOCOL + 1
    _raise_protocol(foreign, newer)
    # This release's own check: it cannot serve the database.
    assert status.main(argv) == status.FAILURE
    assert 'This release cannot serve the database' in \
        capsys.readouterr().out
    monkeypatch.setattr(changes, 'PROTOCOL', newer)
    assert status.main(argv) == status.WARNING
    out = capsys.readouterr().out
    assert '%s pid %d' % (socket.gethostname(), os.getpid()) in out
    assert 'protocol %d' % (newer - 1) in out
