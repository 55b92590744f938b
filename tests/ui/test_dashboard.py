"""The dashboard in a real browser (Debian's Chromium) against a live
server holding ``scene``'s cloud: each view's numbers equal the API's own
answers, no console errors (CSP violations and failed requests
included), a reader sees the audit's refusal, keyboard navigation works
and shared links restore their view."""

import collections

import pytest

from tests.ui import browser as keys
from tests.ui import scene as scene_module


def capacity(record):
    return int((record['total'] - record['reserved'])
               * record['allocation_ratio'])


# -- the summary --------------------------------------------------------------

SUMMARY_ROWS = """
return Array.from(document.querySelectorAll('table.classes tbody tr')).map(
  function (tr) {
    var row = {class: tr.dataset.class};
    tr.querySelectorAll('td[data-field]').forEach(function (td) {
      var meter = td.querySelector('.meter');
      row[td.dataset.field] = meter
        ? [Number(meter.dataset.value), Number(meter.dataset.max)]
        : Number(td.querySelector('.n').dataset.value);
    });
    return row;
  });
"""

FACTS = """
var found = {};
var within = document.querySelectorAll(arguments[0] + ' [data-field]');
within.forEach(function (e) {
  var n = e.classList.contains('n') ? e : e.querySelector('.n');
  if (n) found[e.dataset.field] = Number(n.dataset.value);
});
return found;
"""

COUNTS = """
var found = {};
document.querySelectorAll(arguments[0]).forEach(function (li) {
  found[li.dataset.kind] = Number(li.querySelector('.n').dataset.value);
});
return found;
"""

HISTOGRAMS = """
var found = {};
document.querySelectorAll('figure.histogram').forEach(function (figure) {
  found[figure.dataset.class] = Array.from(figure.querySelectorAll(
    'tbody tr')).map(function (tr) {
      return [Number(tr.dataset.min), Number(tr.dataset.max),
              Number(tr.querySelector('.meter').dataset.value)];
    });
});
return found;
"""


def test_summary_equals_the_api(page, live):
    page.sign_in()
    page.open('#/summary?resources=VCPU%3A2')
    assert page.part('summary') == 'ready'
    summary = live.api('/overview')
    assert page.js(FACTS, '[data-part=summary] dl') == {
        key: summary[key] for key in ('providers', 'trees',
                                      'sharing_providers',
                                      'providers_over_capacity')}
    rows = page.js(SUMMARY_ROWS)
    assert [row['class'] for row in rows] == list(
        summary['resource_classes'])
    for row in rows:
        sums = summary['resource_classes'][row['class']]
        assert row.pop('usage') == [sums['used'], sums['capacity']]
        assert row == {'class': row['class'], **{
            key: value for key, value in sums.items()
            if key != 'histogram'}}
    # ... and what upstream's own endpoints say, provider by provider.
    used = collections.Counter()
    capacities = collections.Counter()
    for rp in live.api('/resource_providers')['resource_providers']:
        usages = live.api('/resource_providers/%s/usages'
                          % rp['uuid'])['usages']
        for rc, record in live.api('/resource_providers/%s/inventories'
                                   % rp['uuid'])['inventories'].items():
            capacities[rc] += capacity(record)
            used[rc] += usages[rc]
    assert {row['class']: row['capacity'] for row in rows} == capacities
    assert {row['class']: row['used'] for row in rows} == used
    histograms = page.js(HISTOGRAMS)
    for rc, sums in summary['resource_classes'].items():
        bins = [(b['min'], b['max'], b['providers'])
                for b in sums['histogram']]
        shown = [tuple(item) for item in histograms[rc]]
        # "none", then every bin from the first with providers on.
        first = next((i for i, b in enumerate(bins) if i and b[2]), None)
        assert shown == ([bins[0]] + (bins[first:] if first else []))
    # The audit's counts and the copies that fit, as their endpoints say.
    assert page.part('audit') == 'ready'
    counts = live.api('/audit?limit=1')['counts']
    assert page.js(COUNTS, '[data-part=audit] li') == counts
    assert counts['over_capacity'] == 1 and counts['split_consumers'] == 2
    assert page.part('copies') == 'ready'
    copies = live.api('/allocation_candidates/capacity?resources=VCPU:2')
    assert page.js(FACTS, '[data-part=copies]') == {
        'total': copies['total'],
        'trees': sum(1 for count in copies['roots'].values() if count)}
    assert page.js("return performance.getEntriesByName('summary-drawn')"
                   ".length;") == 1


def test_copies_form_puts_the_request_in_the_url(page, live):
    page.sign_in()
    page.open('#/summary')
    page.b.type('#copies-resources', 'VCPU:4,MEMORY_MB:2048')
    page.b.click('.fit button[type=submit]')
    page.ready('#/summary?resources=VCPU%3A4%2CMEMORY_MB%3A2048')
    assert page.part('copies') == 'ready'
    total = live.api('/allocation_candidates/capacity?resources='
                     'VCPU:4,MEMORY_MB:2048')['total']
    assert page.js(FACTS, '[data-part=copies]')['total'] == total


# -- providers ----------------------------------------------------------------

PROVIDER_ROWS = """
return Array.from(document.querySelectorAll('table.providers tbody tr')).map(
  function (tr) {
    var resources = {};
    tr.querySelectorAll('[data-field=resources] li').forEach(function (li) {
      var meter = li.querySelector('.meter');
      resources[li.dataset.class] = [Number(meter.dataset.value),
                                     Number(meter.dataset.max)];
    });
    return [tr.dataset.uuid, tr.querySelector('th a').textContent, resources];
  });
"""


def listed(answer):
    return [[rp['uuid'], rp['name'], {
        rc: [record['used'], record['capacity']]
        for rc, record in rp['resources'].items()}]
        for rp in answer['resource_providers']]


def test_providers_are_paged_as_the_api_pages_them(page, live):
    page.sign_in()
    page.open('#/providers?limit=25')
    first = live.api('/overview/providers?limit=25')
    assert page.js(PROVIDER_ROWS) == listed(first)
    assert page.js(FACTS, '[data-part=count]') == {
        'shown': 25, 'total': len(live.scene.providers)}
    page.b.click('.paging a[rel=next]')
    page.ready('#/providers?limit=25&marker=' + first['next_marker'])
    second = live.api('/overview/providers?limit=25&marker='
                      + first['next_marker'])
    assert page.js(PROVIDER_ROWS) == listed(second)
    assert second['next_marker'] is None
    names = [row[1] for row in listed(first) + listed(second)]
    assert names == sorted(live.scene.providers)


def test_filters_from_the_form_equal_the_api(page, live):
    page.sign_in()
    page.open('#/providers')
    page.b.type('#f-prefix', 'fill')
    page.b.type('#f-required', 'CUSTOM_FILLER')
    page.b.type('#f-member_of', scene_module.AGG_EDGE)
    page.b.type('#f-free', 'VCPU:5')
    page.b.click('form.filters button[type=submit]')
    query = ('prefix=fill&required=CUSTOM_FILLER&member_of=%s&free=VCPU%%3A5'
             % scene_module.AGG_EDGE)
    page.ready('#/providers?' + query)
    answer = live.api('/overview/providers?' + query)
    assert [row[1] for row in page.js(PROVIDER_ROWS)] == [
        'fill-01', 'fill-05'] == [rp['name'] for rp in
                                  answer['resource_providers']]
    assert page.js(PROVIDER_ROWS) == listed(answer)
    # Upstream's own listing finds the same by trait and aggregate.
    upstream = live.api('/resource_providers?required=CUSTOM_FILLER&'
                        'member_of=%s' % scene_module.AGG_EDGE)
    assert {'fill-01', 'fill-05'} <= {
        rp['name'] for rp in upstream['resource_providers']}


def test_a_bad_filter_is_shown_plainly(page, live):
    page.sign_in()
    page.allowed = ['status of 400']
    page.open('#/providers?required=CUSTOM_NO_SUCH_TRAIT')
    error = page.text('.error')
    assert '400 Bad Request' in error
    assert 'No such trait(s): CUSTOM_NO_SUCH_TRAIT' in error


# -- one provider's tree ------------------------------------------------------

TREE = """
var articles = document.querySelectorAll(arguments[0] + ' article.provider');
return Array.from(articles).map(
  function (article) {
    var inventory = {};
    var rows = article.querySelectorAll('table.inventory tbody tr');
    rows.forEach(function (tr) {
      var row = {};
      tr.querySelectorAll('td[data-field]').forEach(function (td) {
        var meter = td.querySelector('.meter');
        row[td.dataset.field] = meter
          ? [Number(meter.dataset.value), Number(meter.dataset.max)]
          : Number(td.querySelector('.n').dataset.value);
      });
      inventory[tr.dataset.class] = row;
    });
    var texts = function (field) {
      return Array.from(article.querySelectorAll(
        '[data-field=' + field + '] li')).map(function (li) {
          return li.textContent; });
    };
    var li = article.closest('li');
    return {uuid: article.dataset.uuid, inventory: inventory,
            depth: li ? Number(li.dataset.depth) : null,
            traits: texts('traits'), aggregates: texts('aggregates')};
  });
"""

CONSUMERS = """
return Array.from(document.querySelectorAll('table.consumers tbody tr')).map(
  function (tr) {
    var held = {};
    tr.querySelectorAll('[data-field=resources] li').forEach(function (li) {
      var amounts = {};
      li.querySelectorAll('.n').forEach(function (n) {
        amounts[n.dataset.class] = Number(n.dataset.value); });
      held[li.dataset.uuid] = amounts;
    });
    var text = function (field) {
      return tr.querySelector('[data-field=' + field + ']').textContent; };
    return [tr.dataset.consumer, text('consumer_type'), text('project_id'),
            text('user_id'), held];
  });
"""


def upstream_provider(live, uuid):
    base = '/resource_providers/' + uuid
    usages = live.api(base + '/usages')['usages']
    return {
        'uuid': uuid,
        'inventory': {
            rc: {'usage': [usages[rc], capacity(record)],
                 'total': record['total'], 'reserved': record['reserved'],
                 'allocation_ratio': record['allocation_ratio'],
                 'capacity': capacity(record)}
            for rc, record in live.api(base + '/inventories')[
                'inventories'].items()},
        'traits': sorted(live.api(base + '/traits')['traits']),
        'aggregates': sorted(live.api(base + '/aggregates')['aggregates']),
    }


def test_a_tree_equals_upstreams_answers(page, live):
    scene = live.scene
    page.sign_in()
    page.open('#/provider/' + scene.providers['cn1-numa0'])
    tree = page.js(TREE, '[data-part=tree]')
    assert [(scene.name_of(p['uuid']), p.pop('depth')) for p in tree] == [
        ('cn1', 0), ('cn1-numa0', 1), ('cn1-numa0-pf0', 2),
        ('cn1-numa1', 1)]
    in_tree = live.api('/resource_providers?in_tree='
                       + scene.providers['cn1-numa0'])['resource_providers']
    assert sorted(p['uuid'] for p in tree) == sorted(
        rp['uuid'] for rp in in_tree)
    for shown in tree:
        assert shown == upstream_provider(live, shown['uuid'])
    (ss1,) = page.js(TREE, '[data-part=sharing]')
    del ss1['depth']
    assert ss1 == upstream_provider(live, scene.providers['ss1'])
    # The consumers, as each provider's allocations and each consumer's
    # own record say.
    expected = {}
    for rp in in_tree:
        for consumer, held in live.api('/resource_providers/%s/allocations'
                                       % rp['uuid'])['allocations'].items():
            expected.setdefault(consumer, {})[rp['uuid']] = held['resources']
    shown = page.js(CONSUMERS)
    assert {row[0]: row[4] for row in shown} == expected
    for consumer, kind, project, user, _ in shown:
        record = live.api('/allocations/' + consumer)
        assert [kind, project, user] == [record['consumer_type'],
                                         record['project_id'],
                                         record['user_id']]
    assert {row[0] for row in shown} == {scene.consumers['inst-a'],
                                         scene.consumers['evacuated']}


def test_a_consumer_link_shows_its_allocations(page, live):
    scene = live.scene
    page.sign_in()
    page.open('#/provider/' + scene.providers['cn3'])
    page.b.click('table.consumers a.consumer[data-uuid="%s"]'
                 % scene.consumers['evacuated'])
    page.ready('#/consumer/' + scene.consumers['evacuated'])
    record = live.api('/allocations/' + scene.consumers['evacuated'])
    shown = page.js("""var found = {};
      var rows = document.querySelectorAll('table.allocations tbody tr');
      rows.forEach(function (tr) {
        var amounts = {};
        tr.querySelectorAll('.n').forEach(function (n) {
          amounts[n.dataset.class] = Number(n.dataset.value); });
        found[tr.dataset.uuid] = amounts;
      }); return found;""")
    assert shown == {uuid: held['resources']
                     for uuid, held in record['allocations'].items()}
    assert page.text('[data-field=project_id] dd') == record['project_id']


# -- why no candidates -------------------------------------------------------

FUNNEL = """
var found = {};
document.querySelectorAll('[data-group]').forEach(function (section) {
  found[section.dataset.group] = Array.from(section.querySelectorAll(
    'tbody tr')).map(function (tr) {
      var meter = function (field) {
        var m = tr.querySelector('[data-field=' + field + '] .meter');
        return [Number(m.dataset.value), Number(m.dataset.max)];
      };
      var n = function (field) {
        return Number(tr.querySelector('[data-field=' + field + '] .n')
                      .dataset.value);
      };
      return [tr.dataset.step, meter('providers'), n('providers_removed'),
              meter('trees'), n('trees_removed')];
    });
});
return found;
"""


def test_why_no_candidates_draws_explains_funnel(page, live):
    page.sign_in()
    page.open('#/explain')
    page.b.type('fieldset.group input[name=resources]',
                'VCPU:2,MEMORY_MB:4096')
    page.b.type('fieldset.group input[name=required]', 'HW_CPU_X86_AVX2')
    page.b.type('fieldset.group input[name=forbidden]', 'CUSTOM_FILLER')
    page.b.click('form.request button.secondary')     # add a group
    page.b.type('fieldset.group:nth-of-type(2) input[name=suffix]', '1')
    page.b.type('fieldset.group:nth-of-type(2) input[name=resources]',
                'SRIOV_NET_VF:1')
    page.js("var select = document.querySelector('#group-policy');"
            "select.value = 'none';")
    page.b.click('form.request .actions button[type=submit]')
    query = ('resources=VCPU%3A2%2CMEMORY_MB%3A4096&required='
             'HW_CPU_X86_AVX2%2C%21CUSTOM_FILLER&resources1=SRIOV_NET_VF%3A1'
             '&group_policy=none')
    page.ready('#/explain?' + query)
    assert page.part('explain') == 'ready'
    assert page.part('capacity') == 'ready'
    answer = live.api('/allocation_candidates/explain?' + query)
    assert page.text('[data-field=summary]') == answer['summary']
    assert page.js(FUNNEL) == {group['suffix']: [
        [step['constraint'],
         [step['providers']['kept'],
          step['providers']['kept'] + step['providers']['removed']],
         step['providers']['removed'],
         [step['trees']['kept'],
          step['trees']['kept'] + step['trees']['removed']],
         step['trees']['removed']] for step in group['constraints']]
        for group in answer['groups']}
    assert answer['allocation_requests'] == page.js(
        FACTS, '[data-part=explain] dl')['allocation_requests']
    copies = live.api('/allocation_candidates/capacity?' + query)
    assert page.js(FACTS, '[data-part=capacity]')['total'] == copies['total']
    # The form is rebuilt from the URL: a shared link shows the request.
    page.open('#/explain?' + query)
    assert page.js("return Array.from(document.querySelectorAll("
                   "'fieldset.group input')).map(function (i) { return "
                   "i.name + '=' + i.value; });") == [
        'resources=VCPU:2,MEMORY_MB:4096', 'required=HW_CPU_X86_AVX2',
        'forbidden=CUSTOM_FILLER', 'member_of=', 'suffix=1',
        'resources=SRIOV_NET_VF:1', 'required=', 'forbidden=', 'member_of=']


# -- the audit and the what-if -----------------------------------------------

def test_the_audit_equals_the_api_and_links_its_findings(page, live):
    scene = live.scene
    page.sign_in()
    page.open('#/audit')
    assert page.part('audit') == 'ready'
    audit = live.api('/audit?limit=200')
    assert page.js(COUNTS, '[data-part=audit] ul.counts li') == audit[
        'counts']
    (over,) = audit['over_capacity']
    row = '[data-kind=over_capacity] tr[data-uuid="%s"]' % scene.providers[
        'cn3']
    assert page.js("""var tr = document.querySelector(arguments[0]);
        return ['capacity', 'used', 'over'].map(function (f) {
          return Number(tr.querySelector('[data-field=' + f + '] .n')
                        .dataset.value);
        });""", row) == [over['capacity'], over['used'], over['over']]
    assert page.js("return Array.from(document.querySelectorAll(arguments[0]"
                   " + ' a.consumer')).map(function (a) { return "
                   "a.dataset.uuid; });", row) == over['consumers']
    split = sorted(page.js("return Array.from(document.querySelectorAll("
                           "'[data-kind=split_consumers] tr[data-consumer]'"
                           ")).map(function (tr) { return "
                           "tr.dataset.consumer; });"))
    assert split == sorted(f['consumer'] for f in audit['split_consumers'])
    assert scene.consumers['evacuated'] in split
    # A finding's provider opens its tree.
    page.b.click(row + ' th a.provider')
    page.ready('#/provider/' + scene.providers['cn3'])
    assert page.text('h1') == 'Provider cn3'


def test_what_if_before_and_after_equal_the_api(page, live):
    scene = live.scene
    page.sign_in()
    page.open('#/what-if')
    page.b.type('#wi-key', scene.providers['cn2'])
    page.b.type('#wi-class', 'VCPU')
    page.b.type('#wi-ratio', '0.25')
    page.b.type('#wi-resources', 'VCPU:2')
    page.b.click('form.filters button[type=submit]')
    page.ready()
    assert page.part('what-if') == 'ready'
    answer = live.api('/audit/what_if', 'POST', {
        'inventories': {scene.providers['cn2']: {
            'VCPU': {'allocation_ratio': 0.25}}},
        'resources': 'VCPU:2'})
    (row,) = answer['providers']
    assert (row['capacity_before'], row['capacity_after'],
            row['over_after']) == (128, 8, 1)
    shown = page.js("""
        var tr = document.querySelector('table.what-if tbody tr');
        var cell = function (f) {
          return tr.querySelector('[data-field=' + f + ']'); };
        var meter = function (f) {
          var m = cell(f).querySelector('.meter');
          return [Number(m.dataset.value), Number(m.dataset.max)]; };
        var n = function (f) {
          return Number(cell(f).querySelector('.n').dataset.value); };
        return [tr.dataset.uuid, meter('before'), meter('after'),
                n('over_before'), n('over_after')];""")
    assert shown == [scene.providers['cn2'],
                     [row['used'], row['capacity_before']],
                     [row['used'], row['capacity_after']],
                     row['over_before'], row['over_after']]
    assert page.js(FACTS, '[data-field=copies]') == {
        'copies-before': answer['capacity']['before'],
        'copies-after': answer['capacity']['after']}
    # The same view from its link, for a trait's providers.
    page.open('#/what-if?target=trait&key=CUSTOM_RACK_A&resource_class=VCPU'
              '&total=1')
    assert page.part('what-if') == 'ready'
    answer = live.api('/audit/what_if', 'POST', {'by_trait': {
        'CUSTOM_RACK_A': {'VCPU': {'total': 1}}}})
    assert page.js("return Array.from(document.querySelectorAll("
                   "'table.what-if tbody tr')).map(function (tr) { return "
                   "[tr.dataset.uuid, Number(tr.querySelector("
                   "'[data-field=over_after] .n').dataset.value)]; });") == [
        [row['resource_provider']['uuid'], row['over_after']]
        for row in answer['providers']]


# -- who sees what ----------------------------------------------------------

def test_a_reader_sees_what_policy_lets_it_and_the_audits_refusal(page,
                                                                   live):
    page.allowed = ['status of 403']
    page.sign_in('reader:%s' % scene_module.PROJECT_A, 'reader')
    # The policy file opens the overview to readers...
    page.open('#/summary')
    assert page.part('summary') == 'ready'
    assert page.js(FACTS, '[data-part=summary] dl')['providers'] == len(
        live.scene.providers)
    # ... not the audit, and the page says so.
    assert page.part('audit') == 'error'
    words = page.text('[data-part=audit] .error')
    assert '403 Forbidden' in words
    assert 'placement:audit to be performed' in words
    assert 'admin-only' in words
    page.open('#/audit')
    assert page.part('audit') == 'error'
    words = page.text('[data-part=audit]')
    assert '403 Forbidden: Policy does not allow placement:audit to be ' \
           'performed.' in words
    assert 'admin-only' in words
    page.open('#/what-if?target=provider&key=%s&resource_class=VCPU&'
              'total=1' % live.scene.providers['cn1'])
    assert page.part('what-if') == 'error'
    assert 'placement:audit:what_if' in page.text('[data-part=what-if]')
    # A token with no role at all is refused the summary, plainly.
    page.sign_in('nobody')
    page.open('#/summary')
    assert page.part('summary') == 'error'
    assert 'Policy does not allow placement:overview to be performed.' in (
        page.text('[data-part=summary] .error'))


def test_the_token_stays_in_the_tab(page, live):
    page.sign_in('admin')
    assert 'admin' not in page.js('return location.href;')
    assert page.js('return document.cookie;') == ''
    assert page.js('return localStorage.length;') == 0
    assert page.js("return sessionStorage.getItem("
                   "'placement-dashboard.token');") == 'admin'
    page.b.click('#sign-out')
    page.ready()
    assert page.text('h1') == 'Sign in'
    assert page.js('return sessionStorage.length;') == 0


# -- keyboard, labels, links ------------------------------------------------

def test_keyboard_navigation(page, live):
    page.sign_in()
    page.open('#/summary')
    page.b.keys(keys.TAB)
    assert page.js('return document.activeElement.id;') == 'skip'
    page.b.keys(keys.ENTER)
    assert page.js('return document.activeElement.tagName;') == 'H1'
    # From the top of a fresh load: the skip link, then the views in
    # order.
    page.open('#/summary')
    page.b.keys(keys.TAB, keys.TAB, keys.TAB)
    assert page.js('return document.activeElement.dataset.view;') == (
        'providers')
    page.b.keys(keys.ENTER)
    page.ready('#/providers')
    assert page.js('return [document.activeElement.tagName, '
                   'document.activeElement.textContent];') == [
        'H1', 'Providers']
    assert page.js("return document.querySelector('nav a[aria-current]')"
                   ".dataset.view;") == 'providers'
    # The filter form by keyboard alone: focus its first field, type,
    # submit with Enter.
    page.js("document.querySelector('#f-prefix').focus();")
    page.b.keys(*'cn1-numa', keys.ENTER)
    page.ready('#/providers?prefix=cn1-numa')
    assert [row[1] for row in page.js(PROVIDER_ROWS)] == [
        'cn1-numa0', 'cn1-numa0-pf0', 'cn1-numa1']
    # Tab reaches a result's link, Enter opens it.
    page.js("document.querySelector('#f-limit').focus();")
    page.b.keys(keys.TAB, keys.TAB, keys.TAB)
    assert page.js('return document.activeElement.textContent;') == (
        'cn1-numa0')
    page.b.keys(keys.ENTER)
    page.ready('#/provider/' + live.scene.providers['cn1-numa0'])


UNLABELLED = """
return Array.from(document.querySelectorAll('input, select, textarea')).filter(
  function (control) {
    return control.type !== 'hidden' && !control.labels.length
      && !control.getAttribute('aria-label');
  }).map(function (control) { return control.outerHTML; });
"""


@pytest.mark.parametrize('view', [
    '#/summary', '#/providers', '#/explain?resources=VCPU%3A1',
    '#/audit', '#/what-if'])
def test_every_control_is_labelled(page, live, view):
    page.sign_in()
    page.open(view)
    assert page.js(UNLABELLED) == []
    # Every bar has its numbers beside it, as text (READ_NUMBERS, after
    # each test, checks they are the bar's own).
    assert page.js("return Array.from(document.querySelectorAll('svg.bar'))"
                   ".filter(function (bar) { return !bar.nextElementSibling"
                   " || !/[0-9]/.test(bar.nextElementSibling.textContent);"
                   " }).length;") == 0
    page.b.click('#sign-out')
    page.ready()
    assert page.js(UNLABELLED) == []


def test_a_shared_link_opens_its_view_after_signing_in(page, live):
    page.b.get(live.url + '#/summary')
    page.js('sessionStorage.clear();')
    link = ('#/providers?required=HW_CPU_X86_AVX2&limit=25')
    page.open(link)
    assert page.text('h1') == 'Sign in'
    page.b.type('#token', 'admin')
    page.b.click('form.sign-in button[type=submit]')
    page.ready(link)
    assert page.js("return document.querySelector('#f-required').value;") == (
        'HW_CPU_X86_AVX2')
    assert page.js("return document.querySelector('#f-limit').value;") == '25'
    answer = live.api('/overview/providers?required=HW_CPU_X86_AVX2&limit=25')
    assert page.js(PROVIDER_ROWS) == listed(answer)
    # Back and forward walk the views.
    page.open('#/audit', reload=False)
    page.b.execute('history.back();')
    page.ready(link)


def test_no_console_errors_on_any_view(page, live):
    """Every view, loaded afresh: nothing logged (a CSP violation, a
    failed request, an exception would be)."""
    scene = live.scene
    page.sign_in()
    for view in ['#/summary?resources=VCPU%3A1', '#/providers',
                 '#/provider/' + scene.providers['ss1'],
                 '#/consumer/' + scene.consumers['inst-a'],
                 '#/explain?resources=VCPU%3A1&member_of='
                 + scene_module.AGG_RACK, '#/audit',
                 '#/what-if?target=aggregate&key=%s&resource_class=VCPU&'
                 'allocation_ratio=2' % scene_module.AGG_RACK]:
        page.open(view)
        for part in page.js("return Array.from(document.querySelectorAll("
                            "'[data-part][data-state]')).map(function (e) "
                            "{ return e.dataset.part; });"):
            assert page.part(part) == 'ready', (view, part)
        assert page.console_errors() == [], view
