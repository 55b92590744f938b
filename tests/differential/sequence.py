"""Random request sequences a client of Placement could send.

Each step is drawn from what exists so far (providers, consumers, custom
classes and traits, aggregates), at a random microversion, and now and
then broken on purpose (a wrong type, an unknown field, a stale
generation, a malformed uuid or microversion), so that both the happy
paths and the refusals are compared.  The generator only needs the
answers of one server to follow the state: both are meant to agree.
"""

import json
import random
import uuid as uuidlib

VERSIONS = ['1.0', '1.1', '1.2', '1.4', '1.5', '1.6', '1.7', '1.8', '1.9',
            '1.10', '1.11', '1.12', '1.13', '1.14', '1.15', '1.17', '1.18',
            '1.19', '1.20', '1.21', '1.22', '1.23', '1.24', '1.25', '1.26',
            '1.27', '1.28', '1.29', '1.30', '1.31', '1.32', '1.33', '1.34',
            '1.35', '1.36', '1.37', '1.38', '1.39', 'latest']
STANDARD_CLASSES = ['VCPU', 'MEMORY_MB', 'DISK_GB', 'SRIOV_NET_VF',
                    'NET_BW_EGR_KILOBIT_PER_SEC', 'VGPU']
STANDARD_TRAITS = ['HW_CPU_X86_AVX', 'HW_CPU_X86_AVX2', 'COMPUTE_VOLUME_MULTI_ATTACH',
                   'MISC_SHARES_VIA_AGGREGATE', 'HW_NUMA_ROOT',
                   'STORAGE_DISK_SSD']


class Step:
    """One request: method, path, body (a value, or raw ``bytes``) and
    the microversion header (``None``: none sent)."""

    def __init__(self, method, path, body=None, version=None,
                 content_type='application/json'):
        self.method = method
        self.path = path
        self.body = body
        self.version = version
        self.content_type = content_type

    def payload(self):
        if self.body is None:
            return None
        if isinstance(self.body, bytes):
            return self.body
        return json.dumps(self.body).encode()

    def __str__(self):
        body = self.payload()
        return '%s %s [%s]%s' % (
            self.method, self.path, self.version,
            (' ' + body.decode('utf-8', 'replace')[:300]) if body else '')


class State:
    """What the generator knows exists (as one server answered)."""

    def __init__(self):
        self.providers = {}      # uuid -> {'generation', 'parent', 'root'}
        self.consumers = {}      # uuid -> generation or None
        self.inventories = {}    # provider uuid -> classes it has
        self.classes = []        # custom resource classes
        self.traits = []         # custom traits
        self.aggregates = [str(uuidlib.UUID(int=n + 1)) for n in range(4)]


class Generator:

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.state = State()
        self.counter = 0
        self.actions = [
            (8, self.create_provider), (6, self.set_inventories),
            (3, self.set_inventory), (3, self.set_traits),
            (3, self.set_aggregates), (2, self.update_provider),
            (7, self.put_allocations), (2, self.post_allocations),
            (2, self.delete_allocations), (2, self.create_class),
            (2, self.create_trait), (6, self.list_providers),
            (8, self.candidates), (3, self.usages), (4, self.show),
            (1, self.delete_provider), (1, self.delete_inventory),
            (1, self.delete_class_or_trait), (2, self.broken),
            (1, self.reshape), (2, self.post_inventory),
            (1, self.delete_traits), (1, self.rename_class),
        ]
        self.total = sum(weight for weight, _ in self.actions)

    # -- helpers -------------------------------------------------------

    def version(self, low='1.0'):
        low = tuple(int(part) for part in low.split('.'))
        choices = [v for v in VERSIONS if v == 'latest' or
                   tuple(int(p) for p in v.split('.')) >= low]
        if self.rng.random() < 0.1:
            return self.rng.choice(VERSIONS)   # perhaps too old
        return self.rng.choice(choices)

    def uuid(self):
        self.counter += 1
        return str(uuidlib.UUID(int=(self.rng.getrandbits(64) << 64)
                                | self.counter))

    def provider(self):
        if not self.state.providers or self.rng.random() < 0.05:
            return self.uuid()
        return self.rng.choice(sorted(self.state.providers))

    def generation(self, uuid):
        known = self.state.providers.get(uuid, {}).get('generation', 0)
        return known if self.rng.random() > 0.1 else known + 1

    def classes(self):
        return STANDARD_CLASSES + self.state.classes

    def traits(self):
        return STANDARD_TRAITS + self.state.traits

    def amount(self):
        return self.rng.choice([1, 1, 2, 4, 8, 16, 1024, 0, -1])

    # -- the steps -------------------------------------------------------

    def next(self):
        pick = self.rng.uniform(0, self.total)
        for weight, action in self.actions:
            pick -= weight
            if pick <= 0:
                return action()
        return self.actions[-1][1]()

    def create_provider(self):
        uuid = self.uuid()
        body = {'name': 'rp-%d' % self.counter, 'uuid': uuid}
        roll = self.rng.random()
        if roll < 0.4 and self.state.providers:
            body['parent_provider_uuid'] = self.provider()
        elif roll < 0.45:
            body['name'] = self.rng.choice(['', 'x' * 201, 7, None])
        elif roll < 0.5 and self.state.providers:
            body['uuid'] = self.rng.choice(sorted(self.state.providers))
        return Step('POST', '/resource_providers', body, self.version())

    def set_inventories(self):
        uuid = self.provider()
        inventories = {}
        for name in self.rng.sample(self.classes(), self.rng.randint(0, 3)):
            record = {'total': self.rng.choice([4, 8, 64, 1024, 0])}
            if self.rng.random() < 0.5:
                record['reserved'] = self.rng.choice([0, 1, 8, 2000])
            if self.rng.random() < 0.3:
                record['max_unit'] = self.rng.choice([1, 4, 16])
            if self.rng.random() < 0.3:
                record['step_size'] = self.rng.choice([1, 2, 3])
            if self.rng.random() < 0.3:
                record['allocation_ratio'] = self.rng.choice(
                    [1.0, 16.0, 0.5, 0])
            if self.rng.random() < 0.2:
                record['min_unit'] = self.rng.choice([1, 2, 32])
            if self.rng.random() < 0.7:
                record = {key: value for key, value in record.items()
                          if key in ('total', 'reserved')}
                record['total'] = max(record['total'], 64)
                record['reserved'] = min(record.get('reserved', 0), 8)
            inventories[name] = record
        return Step('PUT', '/resource_providers/%s/inventories' % uuid,
                    {'resource_provider_generation': self.generation(uuid),
                     'inventories': inventories}, self.version())

    def set_inventory(self):
        uuid = self.provider()
        held = sorted(self.state.inventories.get(uuid, ()))
        name = (self.rng.choice(held) if held and self.rng.random() < 0.8
                else self.rng.choice(self.classes()))
        return Step('PUT', '/resource_providers/%s/inventories/%s'
                    % (uuid, name),
                    {'resource_provider_generation': self.generation(uuid),
                     'total': self.rng.choice([1, 16, 128])},
                    self.version())

    def post_inventory(self):
        uuid = self.provider()
        record = {'resource_class': self.rng.choice(self.classes()),
                  'resource_provider_generation': self.generation(uuid),
                  'total': self.rng.choice([8, 64, 0])}
        if self.rng.random() < 0.3:
            record['max_unit'] = self.rng.choice([1, 4])
        return Step('POST', '/resource_providers/%s/inventories' % uuid,
                    record, self.version())

    def delete_traits(self):
        return Step('DELETE', '/resource_providers/%s/traits'
                    % self.provider(), None, self.version('1.6'))

    def rename_class(self):
        """Before 1.7 a PUT renames a custom class."""
        old = self.rng.choice(self.classes())
        new = 'CUSTOM_RC_%d' % self.rng.randint(0, 6)
        return Step('PUT', '/resource_classes/%s' % old, {'name': new},
                    self.rng.choice(['1.2', '1.5', '1.6']))

    def set_traits(self):
        uuid = self.provider()
        traits = self.rng.sample(self.traits(), self.rng.randint(0, 3))
        if self.rng.random() < 0.05:
            traits.append('CUSTOM_NOT_THERE')
        return Step('PUT', '/resource_providers/%s/traits' % uuid,
                    {'resource_provider_generation': self.generation(uuid),
                     'traits': traits}, self.version('1.6'))

    def set_aggregates(self):
        uuid = self.provider()
        aggregates = self.rng.sample(self.state.aggregates,
                                     self.rng.randint(0, 2))
        version = self.version('1.1')
        body = aggregates
        if version == 'latest' or tuple(
                int(p) for p in version.split('.')) >= (1, 19):
            body = {'aggregates': aggregates,
                    'resource_provider_generation': self.generation(uuid)}
        return Step('PUT', '/resource_providers/%s/aggregates' % uuid,
                    body, version)

    def update_provider(self):
        uuid = self.provider()
        body = {'name': 'renamed-%d' % self.rng.randint(0, 50)}
        if self.rng.random() < 0.5:
            body['parent_provider_uuid'] = self.rng.choice(
                [None, self.provider()])
        return Step('PUT', '/resource_providers/%s' % uuid, body,
                    self.version())

    def _claim(self, uuid):
        """Resources to claim on a provider: mostly what it has, in
        amounts it can give."""
        held = sorted(self.state.inventories.get(uuid, ()))
        if held and self.rng.random() < 0.8:
            return {name: self.rng.choice([1, 1, 2, 4])
                    for name in self.rng.sample(held, min(len(held), 2))}
        return {self.rng.choice(self.classes()): self.amount()}

    def _allocations(self, version):
        stocked = sorted(uuid for uuid in self.state.providers
                         if self.state.inventories.get(uuid))
        pool = (stocked if stocked and self.rng.random() < 0.8
                else sorted(self.state.providers))
        chosen = self.rng.sample(pool, min(len(pool),
                                           self.rng.randint(1, 2)))
        old = version != 'latest' and tuple(
            int(p) for p in version.split('.')) < (1, 12)
        if old:
            return [{'resource_provider': {'uuid': uuid},
                     'resources': self._claim(uuid)} for uuid in chosen]
        return {uuid: {'resources': self._claim(uuid)} for uuid in chosen}

    def _consumer_body(self, consumer, version):
        body = {'allocations': self._allocations(version),
                'project_id': self.rng.choice(['p1', 'p2']),
                'user_id': self.rng.choice(['u1', 'u2'])}
        generation = self.state.consumers.get(consumer)
        body['consumer_generation'] = (
            generation if self.rng.random() > 0.1 else 99)
        body['consumer_type'] = self.rng.choice(['INSTANCE', 'MIGRATION'])
        return body

    def consumer(self):
        if not self.state.consumers or self.rng.random() < 0.5:
            return self.uuid()
        return self.rng.choice(sorted(self.state.consumers))

    def put_allocations(self):
        if not self.state.providers:
            return self.create_provider()
        consumer = self.consumer()
        version = self.version()
        body = self._consumer_body(consumer, version)
        # Drop what the version does not know (else every old request is a
        # schema refusal): usually, not always.
        if self.rng.random() < 0.9 and version != 'latest':
            minor = int(version.split('.')[1])
            if minor < 38:
                body.pop('consumer_type')
            if minor < 28:
                body.pop('consumer_generation')
            if minor < 8:
                body.pop('project_id')
                body.pop('user_id')
        return Step('PUT', '/allocations/%s' % consumer, body, version)

    def post_allocations(self):
        if not self.state.providers:
            return self.create_provider()
        version = self.version('1.13')
        body = {}
        for _ in range(self.rng.randint(1, 2)):
            consumer = self.consumer()
            entry = self._consumer_body(consumer, 'latest')
            if version != 'latest' and int(version.split('.')[1]) < 38:
                entry.pop('consumer_type')
            if version != 'latest' and int(version.split('.')[1]) < 28:
                entry.pop('consumer_generation')
            body[consumer] = entry
        return Step('POST', '/allocations', body, version)

    def delete_allocations(self):
        return Step('DELETE', '/allocations/%s' % self.consumer(), None,
                    self.version())

    def create_class(self):
        name = 'CUSTOM_RC_%d' % self.rng.randint(0, 6)
        if self.rng.random() < 0.5:
            return Step('PUT', '/resource_classes/%s' % name, None,
                        self.version('1.7'))
        return Step('POST', '/resource_classes', {'name': name},
                    self.version('1.2'))

    def create_trait(self):
        name = 'CUSTOM_T_%d' % self.rng.randint(0, 6)
        return Step('PUT', '/traits/%s' % name, None, self.version('1.6'))

    def list_providers(self):
        params = []
        rng = self.rng
        if rng.random() < 0.3:
            params.append('resources=%s:%d' % (rng.choice(self.classes()),
                                               rng.choice([1, 4, 100])))
        if rng.random() < 0.2 and self.state.providers:
            params.append('in_tree=%s' % self.provider())
        if rng.random() < 0.2:
            params.append('member_of=%s%s' % (
                rng.choice(['', 'in:', '!']),
                ','.join(rng.sample(self.state.aggregates, 2))))
        if rng.random() < 0.2:
            params.append('required=%s%s' % (rng.choice(['', '!']),
                                             rng.choice(self.traits())))
        if rng.random() < 0.1:
            params.append('name=rp-%d' % rng.randint(0, self.counter))
        if rng.random() < 0.05:
            params.append(rng.choice(['resources=VCPU', 'in_tree=bad',
                                      'member_of=in:x', 'bogus=1',
                                      'required=', 'name=']))
        return Step('GET', '/resource_providers' + _query(params), None,
                    self.version())

    def candidates(self):
        rng = self.rng
        count = rng.randint(1, 3)
        params = ['resources=' + ','.join(
            '%s:%d' % (name, rng.choice([1, 1, 2, 8, 64]))
            for name in rng.sample(self.classes(), count))]
        if rng.random() < 0.3:
            params.append('required=%s' % ','.join(
                rng.choice(['', '!']) + trait
                for trait in rng.sample(self.traits(), rng.randint(1, 2))))
        if rng.random() < 0.3:
            params.append('member_of=in:%s' % ','.join(
                rng.sample(self.state.aggregates, 2)))
        if rng.random() < 0.3:
            params.append('resources1=%s:1' % rng.choice(self.classes()))
            params.append('group_policy=%s' % rng.choice(
                ['none', 'isolate']))
            if rng.random() < 0.3:
                params.append('resources2=%s:1' % rng.choice(
                    self.classes()))
            if rng.random() < 0.3:
                params.append('required1=%s' % rng.choice(self.traits()))
            if rng.random() < 0.2:
                params.append('member_of1=%s' % rng.choice(
                    self.state.aggregates))
            if rng.random() < 0.2:
                params.append('resources3=%s:1' % rng.choice(
                    self.classes()))
                params.append('same_subtree=_1,_3')
        if rng.random() < 0.15:     # any of (1.39)
            params.append('required=in:%s' % ','.join(
                rng.sample(self.traits(), 2)))
        if rng.random() < 0.1:      # none of (1.32)
            params.append('member_of=!%s' % rng.choice(
                self.state.aggregates))
        if rng.random() < 0.15:     # a group named by a string (1.33)
            params.append('resources_G=%s:1' % rng.choice(self.classes()))
            if rng.random() < 0.5:
                params.append('required_G=%s' % rng.choice(self.traits()))
            params.append('group_policy=%s' % rng.choice(
                ['none', 'isolate']))
        if rng.random() < 0.2 and self.state.providers:
            params.append('in_tree=%s' % self.provider())
        if rng.random() < 0.2:
            params.append('limit=%d' % rng.choice([1, 2, 5]))
        if rng.random() < 0.1:
            params.append('root_required=%s' % rng.choice(self.traits()))
        if rng.random() < 0.05:
            params.append(rng.choice(['resources=VCPU:x', 'limit=0',
                                      'group_policy=bogus', 'resources1=',
                                      'required1=HW_NUMA_ROOT']))
        return Step('GET', '/allocation_candidates' + _query(params), None,
                    self.version('1.10'))

    def usages(self):
        rng = self.rng
        roll = rng.random()
        if roll < 0.4:
            return Step('GET', '/resource_providers/%s/usages'
                        % self.provider(), None, self.version())
        params = ['project_id=%s' % rng.choice(['p1', 'p2', 'p3'])]
        if rng.random() < 0.5:
            params.append('user_id=%s' % rng.choice(['u1', 'u2']))
        if rng.random() < 0.3:
            params.append('consumer_type=%s' % rng.choice(
                ['INSTANCE', 'MIGRATION', 'all', 'unknown', 'INSTANCE,all']))
        if rng.random() < 0.05:
            params = []
        return Step('GET', '/usages' + _query(params), None,
                    self.version('1.9'))

    def show(self):
        rng = self.rng
        uuid = self.provider()
        path = rng.choice([
            '/resource_providers/%s' % uuid,
            '/resource_providers/%s/inventories' % uuid,
            '/resource_providers/%s/inventories/%s' % (
                uuid, rng.choice(self.classes())),
            '/resource_providers/%s/traits' % uuid,
            '/resource_providers/%s/aggregates' % uuid,
            '/resource_providers/%s/allocations' % uuid,
            '/allocations/%s' % self.consumer(),
            '/traits', '/traits?name=in:%s' % ','.join(self.traits()[:3]),
            '/traits?associated=%s' % rng.choice(['true', 'false', 'x']),
            '/resource_classes',
            '/resource_classes/%s' % rng.choice(self.classes()),
            '/',
        ])
        return Step('GET', path, None, self.version())

    def delete_provider(self):
        return Step('DELETE', '/resource_providers/%s' % self.provider(),
                    None, self.version())

    def delete_inventory(self):
        uuid = self.provider()
        if self.rng.random() < 0.5:
            return Step('DELETE', '/resource_providers/%s/inventories/%s'
                        % (uuid, self.rng.choice(self.classes())), None,
                        self.version())
        return Step('DELETE', '/resource_providers/%s/inventories' % uuid,
                    None, self.version('1.5'))

    def delete_class_or_trait(self):
        if self.rng.random() < 0.5 or not self.state.traits:
            name = self.rng.choice(self.classes())
            return Step('DELETE', '/resource_classes/%s' % name, None,
                        self.version('1.2'))
        return Step('DELETE', '/traits/%s' % self.rng.choice(self.traits()),
                    None, self.version('1.6'))

    def reshape(self):
        """A reshape of one provider's inventory, with one consumer's
        allocations rewritten against it (or none)."""
        uuid = self.provider()
        inventories = {uuid: {
            'resource_provider_generation': self.generation(uuid),
            'inventories': {name: {'total': self.rng.choice([8, 64])}
                            for name in self.rng.sample(self.classes(), 2)}}}
        allocations = {}
        if self.state.consumers and self.rng.random() < 0.7:
            consumer = self.rng.choice(sorted(self.state.consumers))
            classes = sorted(inventories[uuid]['inventories'])
            allocations[consumer] = {
                'allocations': {uuid: {'resources': {
                    self.rng.choice(classes): self.rng.choice([1, 2])}}},
                'project_id': 'p1', 'user_id': 'u1',
                'consumer_generation': self.state.consumers[consumer]}
            if self.rng.random() < 0.5:
                allocations[consumer]['consumer_type'] = 'INSTANCE'
        return Step('POST', '/reshaper', {'inventories': inventories,
                                          'allocations': allocations},
                    self.version('1.30'))

    def broken(self):
        rng = self.rng
        uuid = self.provider()
        return rng.choice([
            Step('POST', '/resource_providers', b'{"name": ', '1.20'),
            Step('POST', '/resource_providers', b'[]', '1.20'),
            Step('POST', '/resource_providers', {'name': 'x', 'bogus': 1},
                 '1.20'),
            Step('PUT', '/resource_providers/%s/inventories' % uuid,
                 {'inventories': {}}, '1.20'),
            Step('PUT', '/resource_providers/%s/inventories' % uuid,
                 {'resource_provider_generation': 'x', 'inventories': {}},
                 '1.26'),
            Step('GET', '/resource_providers', None, '1.999'),
            Step('GET', '/resource_providers', None, 'bogus'),
            Step('GET', '/resource_providers/not-a-uuid', None, '1.20'),
            Step('PUT', '/allocations/not-a-uuid', {'allocations': {}},
                 '1.28'),
            Step('PUT', '/allocations/%s' % self.uuid(),
                 {'allocations': {}, 'project_id': 'p', 'user_id': 'u',
                  'consumer_generation': None}, '1.28'),
            Step('POST', '/resource_providers', {'name': 'y'}, '1.20',
                 content_type='text/plain'),
            Step('PATCH', '/resource_providers/%s' % uuid, {}, '1.20'),
            Step('POST', '/traits', None, '1.20'),
            Step('PUT', '/traits/NOT_CUSTOM', None, '1.20'),
            Step('PUT', '/resource_classes/NOT_CUSTOM', None, '1.7'),
            Step('GET', '/allocation_candidates', None, '1.10'),
            Step('POST', '/reshaper', {'inventories': {}, 'allocations': {}},
                 '1.30'),
            Step('DELETE', '/resource_providers/%s/inventories' % uuid, None,
                 '1.4'),
            Step('POST', '/allocations/%s' % self.uuid(), None, '1.20'),
            Step('OPTIONS', '/resource_providers', None, '1.20'),
            Step('GET', '/resource_providers', None, None),
            Step('PUT', '/resource_providers/%s' % uuid, {'name': 'z'},
                 '1.20', content_type=''),
            Step('GET', '/resource_providers?member_of=%s' % ','.join(
                ['in:' + self.state.aggregates[0]] * 2), None, '1.3'),
        ])

    # -- following the state ------------------------------------------

    def observe(self, step, status):
        """Learn from one server's answer which names now exist, and
        which reads (themselves compared) tell the generations after a
        write."""
        if status >= 400 or step.method == 'GET':
            return []
        state = self.state
        path = step.path.split('?')[0]
        parts = path.strip('/').split('/')
        reads = [Step('GET', '/resource_providers', None, 'latest')]
        if parts[0] in ('allocations', 'reshaper'):
            if parts[0] == 'reshaper':
                for uuid, entry in step.body['inventories'].items():
                    state.inventories[uuid] = set(entry['inventories'])
            consumers = ([parts[1]] if len(parts) == 2 else
                         list(step.body.get('allocations', {}))
                         if parts[0] == 'reshaper' else list(step.body))
            reads += [Step('GET', '/allocations/%s' % consumer, None,
                           'latest') for consumer in consumers]
        elif parts[0] == 'resource_providers' and len(parts) >= 3 and (
                parts[2] == 'inventories'):
            self._observe_inventories(step, parts)
        elif parts[0] == 'resource_classes':
            if step.method == 'PUT' and step.body is not None:
                if parts[1] in state.classes:   # a rename
                    state.classes.remove(parts[1])
                parts = ['resource_classes', step.body['name']]
            name = (parts[-1] if step.method != 'POST'
                    else step.body.get('name'))
            if step.method == 'DELETE':
                if name in state.classes:
                    state.classes.remove(name)
            elif name not in state.classes:
                state.classes.append(name)
        elif parts[0] == 'traits' and len(parts) == 2:
            if step.method == 'DELETE':
                if parts[1] in state.traits:
                    state.traits.remove(parts[1])
            elif parts[1] not in state.traits:
                state.traits.append(parts[1])
        return reads

    def _observe_inventories(self, step, parts):
        held = self.state.inventories.setdefault(parts[1], set())
        if len(parts) == 4:
            if step.method == 'DELETE':
                held.discard(parts[3])
            else:
                held.add(parts[3])
        elif step.method == 'DELETE':
            held.clear()
        elif step.method == 'PUT':
            held.clear()
            held.update(step.body['inventories'])
        elif step.method == 'POST':
            held.add(step.body['resource_class'])

    def learn(self, read, body):
        """Take the generations from a read ``observe`` asked for."""
        if read.path == '/resource_providers':
            self.state.providers = {
                rp['uuid']: {'generation': rp['generation']}
                for rp in body['resource_providers']}
        else:
            consumer = read.path.rsplit('/', 1)[1]
            if body.get('allocations'):
                self.state.consumers[consumer] = body['consumer_generation']
            else:
                self.state.consumers.pop(consumer, None)


def _query(params):
    return ('?' + '&'.join(params)) if params else ''
