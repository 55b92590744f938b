"""Showing a plan as a diff, and carrying it out.

Providers are written parents first, in waves (a wave's providers in
parallel), each as: create if new, then its whole inventory, traits and
aggregates, each write naming the generation the last one returned. A
generation conflict (another writer got there first) re-reads that
provider and applies the same intent to what it finds, up to
``RETRIES`` times. The first failure of any other kind stops the run;
the report then says what was applied, what failed and why, and what was
not attempted.
"""

import concurrent.futures
import dataclasses
import sys

from placement.apply import client as placement_client
from placement.apply import plan as plans

RETRIES = 5
CONCURRENT_UPDATE = 'placement.concurrent_update'


def _fields(record):
    return ' '.join('%s=%s' % (field, record[field]) for field in sorted(
        record))


def _inventory_lines(current, wanted):
    lines = []
    for rc in sorted(set(current) | set(wanted)):
        if rc not in wanted:
            lines.append('    - inventory %s' % rc)
        elif rc not in current:
            lines.append('    + inventory %s %s' % (rc, _fields(wanted[rc])))
        else:
            changed = ['%s %s -> %s' % (field, current[rc].get(field), value)
                       for field, value in sorted(wanted[rc].items())
                       if current[rc].get(field) != value]
            if changed:
                lines.append('    ~ inventory %s %s' % (rc, ', '.join(
                    changed)))
    return lines


def _set_lines(label, current, wanted):
    added, removed = sorted(set(wanted) - set(current)), sorted(
        set(current) - set(wanted))
    return (['    + %s %s' % (label, ' '.join(added))] if added else []) + (
        ['    - %s %s' % (label, ' '.join(removed))] if removed else [])


def render(plan):
    """The plan as a readable diff, one block per provider changed."""
    lines = []
    creating = changing = 0
    for change in plan.changes:
        if change.empty():
            continue
        intent = change.intent
        inventories, traits, aggregates = plans.comparable(
            change.current[0]), change.current[1], change.current[2]
        wanted = change.wanted()
        if intent.create:
            creating += 1
            lines.append('+ provider %s (new%s)' % (
                intent.name, ', parent %s' % intent.parent_name
                if intent.parent_name else ''))
        else:
            changing += 1
            lines.append('~ provider %s (%s)' % (intent.name, intent.uuid))
        lines += _inventory_lines(inventories, wanted[0])
        lines += _set_lines('traits', traits, wanted[1])
        lines += _set_lines('aggregates', aggregates, wanted[2])
    for uuid, name in plan.deletions:
        lines.append('- provider %s (%s)' % (name, uuid))
    if not lines:
        return 'No changes.'
    lines.append('%d provider(s) to create, %d to change, %d to delete.' % (
        creating, changing, len(plan.deletions)))
    return '\n'.join(lines)


def inventory_changes(plan):
    """{uuid: {class: wanted record, or None to remove}} of the providers
    that exist and whose inventory the plan changes: what the what-if
    is asked about."""
    changes = {}
    for change in plan.changes:
        if change.intent.create or change.empty():
            continue
        current = plans.comparable(change.current[0])
        wanted = change.wanted()[0]
        classes = {rc: wanted.get(rc) for rc in set(current) | set(wanted)
                   if current.get(rc) != wanted.get(rc)}
        if classes:
            changes[change.intent.uuid] = classes
    return changes


def render_what_if(answer):
    """The what-if's answer as lines under the plan: each class whose
    capacity changes, and who would hold any excess."""
    lines = ['What the inventory changes would do:']
    for row in answer['providers']:
        provider = row['resource_provider']
        line = '    %s %s: capacity %d -> %d, %d used' % (
            provider['name'] or provider['uuid'], row['resource_class'],
            row['capacity_before'], row['capacity_after'], row['used'])
        if row['refused']:
            line += '; REFUSED: %s' % row['refused']
        elif row['over_after']:
            line += '; OVER CAPACITY by %d, held by %s' % (
                row['over_after'], ', '.join(row['consumers']))
        lines.append(line)
    over = sum(1 for row in answer['providers'] if row['over_after'])
    lines.append('%d class(es) would be over capacity.' % over)
    return '\n'.join(lines)


@dataclasses.dataclass
class Report:
    applied: list = dataclasses.field(default_factory=list)
    failed: list = dataclasses.field(default_factory=list)   # (name, why)
    not_attempted: list = dataclasses.field(default_factory=list)

    def text(self):
        lines = ['Applied: %d provider(s).' % len(self.applied)]
        for name, why in self.failed:
            lines.append('FAILED: %s: %s' % (name, why))
        if self.not_attempted:
            lines.append('Not attempted (%d): %s' % (
                len(self.not_attempted), ', '.join(self.not_attempted)))
        return '\n'.join(lines)


def _write(client, change):
    """Make one provider as wanted; retried on generation conflicts."""
    intent = change.intent
    generation, current = change.generation, change.current
    for attempt in range(1, RETRIES + 1):
        try:
            if intent.create:
                parent = intent.parent.uuid if isinstance(
                    intent.parent, plans.Intent) else intent.parent
                created = client.create_provider(intent.name, intent.uuid,
                                                 parent)
                intent.uuid, intent.create = created['uuid'], False
                generation = created['generation']
            inventories, traits, aggregates = intent.wanted(current)
            if plans.comparable(current[0]) != inventories:
                generation = client.set_inventories(
                    intent.uuid, generation, inventories)
            if set(current[1]) != traits:
                generation = client.set_traits(intent.uuid, generation,
                                               traits)
            if set(current[2]) != aggregates:
                client.set_aggregates(intent.uuid, generation, aggregates)
            return
        except placement_client.Conflict as exc:
            if exc.code != CONCURRENT_UPDATE or attempt == RETRIES:
                raise
            generation, inventories, traits, aggregates = client.provider(
                intent.uuid)
            current = (inventories, traits, aggregates)


def _waves(changes):
    """The changes in groups that may run at once: parents first."""
    waves, placed = [], {}
    for change in changes:
        parent = change.intent.parent
        level = placed[id(parent)] + 1 if (
            isinstance(parent, plans.Intent) and id(parent) in placed) else 0
        placed[id(change.intent)] = level
        while len(waves) <= level:
            waves.append([])
        waves[level].append(change)
    return waves


def _ensure_names(client, changes):
    """Custom resource classes and traits the writes will name."""
    classes, traits = set(), set()
    for change in changes:
        classes |= set(change.intent.records)
        traits |= change.intent.traits
    for name in sorted(classes):
        if name.startswith('CUSTOM_'):
            client.ensure_resource_class(name)
    for name in sorted(traits):
        if name.startswith('CUSTOM_'):
            client.ensure_trait(name)


def apply(client, plan, progress=sys.stderr):
    """Carry out ``plan``: (Report, state to record)."""
    report = Report()
    pending = [change for change in plan.changes if not change.empty()]
    total = len(pending) + len(plan.deletions)
    state = dict(plan.state)
    for change in plan.changes:
        if change.empty() and not change.intent.released:
            state[change.intent.uuid] = change.intent.owned()
    try:
        _ensure_names(client, pending)
    except placement_client.Failed as exc:
        report.failed.append(('custom resource classes and traits', str(exc)))
        report.not_attempted = [c.intent.name for c in pending]
        return report, state
    done = 0
    waves = _waves(pending)
    for index, wave in enumerate(waves):
        with concurrent.futures.ThreadPoolExecutor(plans.THREADS) as pool:
            futures = {pool.submit(_write, client, change): change
                       for change in wave}
            for future in concurrent.futures.as_completed(futures):
                change = futures[future]
                try:
                    future.result()
                except placement_client.Failed as exc:
                    report.failed.append((change.intent.name, str(exc)))
                    continue
                report.applied.append(change.intent.name)
                if not change.intent.released:
                    state[change.intent.uuid] = change.intent.owned()
                done += 1
                if progress and total >= 100 and done % 100 == 0:
                    print('  %d/%d providers' % (done, total), file=progress)
        if report.failed:
            report.not_attempted = [
                change.intent.name for later in waves[index + 1:]
                for change in later] + [name for _, name in plan.deletions]
            return report, state
    for uuid, name in plan.deletions:
        try:
            client.delete_provider(uuid)
        except placement_client.Failed as exc:
            report.failed.append((name, str(exc)))
            state[uuid] = {'name': name, 'created': True}
            continue
        report.applied.append(name)
    return report, state
