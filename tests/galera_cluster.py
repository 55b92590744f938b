"""A throwaway three-node MariaDB Galera cluster on loopback.

Each node is a ``mariadb_server.Server`` with the wsrep options: its own
MySQL, group-communication, incremental-state-transfer and state-snapshot
ports on 127.0.0.1, the ``galera-4`` provider, and rsync snapshot
transfer (which works when the nodes run as the ``mysql`` account, as
they do when the tests run as root).  The first node bootstraps the
cluster; the others join it and receive its state.
"""

import os

from tests import mariadb_server

PROVIDERS = ('/usr/lib/galera/libgalera_smm.so', '/usr/lib/libgalera_smm.so')


def installed():
    """Whether a cluster can be started here (RuntimeError if not)."""
    return mariadb_server.installed() and bool(find_provider())


def find_provider():
    for path in PROVIDERS:
        if os.path.exists(path):
            return path
    raise RuntimeError('Galera provider not found: install galera-4')


class Cluster:
    """``extra_options`` go to every node after the cluster's own (a later
    option overrides an earlier one), ``environment`` to its process."""

    def __init__(self, size=3, extra_options=(), environment=None):
        self.nodes = [mariadb_server.Server(environment)
                      for _ in range(size)]
        self.extra_options = list(extra_options)
        self.ports = [{name: mariadb_server._free_port()
                       for name in ('mysql', 'gcomm', 'ist', 'sst')}
                      for _ in range(size)]
        self.provider = find_provider()

    def _options(self, index, bootstrap):
        ports = self.ports[index]
        address = ','.join('127.0.0.1:%d' % p['gcomm'] for p in self.ports)
        options = [
            '--wsrep-on=ON', '--wsrep-provider=%s' % self.provider,
            '--wsrep-cluster-name=placement-test',
            '--wsrep-cluster-address=gcomm://%s' % address,
            '--wsrep-node-name=node%d' % index,
            '--wsrep-node-address=127.0.0.1:%d' % ports['gcomm'],
            '--wsrep-node-incoming-address=127.0.0.1:%d' % ports['mysql'],
            '--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:%d;'
            'ist.recv_addr=127.0.0.1:%d;gcache.size=64M'
            % (ports['gcomm'], ports['ist']),
            '--wsrep-sst-method=rsync',
            '--wsrep-sst-receive-address=127.0.0.1:%d' % ports['sst'],
            '--binlog-format=ROW', '--default-storage-engine=InnoDB',
            '--innodb-autoinc-lock-mode=2', '--innodb-buffer-pool-size=128M',
        ]
        if bootstrap:
            options.append('--wsrep-new-cluster')
        return options + self.extra_options

    def start(self):
        try:
            for index, node in enumerate(self.nodes):
                node.start(self._options(index, bootstrap=index == 0),
                           port=self.ports[index]['mysql'])
                self.wait_synced(index)
        except BaseException:
            self.stop()
            raise
        return self

    def restart(self, index):
        """Start a node that was halted; it rejoins and catches up."""
        self.nodes[index].start(self._options(index, bootstrap=False),
                                port=self.ports[index]['mysql'])
        self.wait_synced(index)

    def wait_synced(self, index, timeout=120):
        import time
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = dict(self.nodes[index].execute(
                "SHOW STATUS LIKE 'wsrep_local_state_comment'"))
            if rows.get('wsrep_local_state_comment') == 'Synced':
                return
            time.sleep(0.3)
        raise RuntimeError('node %d not synced' % index)

    def size(self, index=0):
        return int(dict(self.nodes[index].execute(
            "SHOW STATUS LIKE 'wsrep_cluster_size'"))['wsrep_cluster_size'])

    def stop(self):
        for node in reversed(self.nodes):
            node.stop()
