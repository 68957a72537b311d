// The console's pages. Each renders into `main` from the server's answers and returns once the
// page shows its data; app.js then marks the page ready (data-ready, which the browser test waits
// for). Text from the server is always set as text, never parsed as markup.

import { getJson, getText, segment } from './api.js';
import { parseMetrics, total } from './metrics.js';
import { dependencyGraph, lineChart, shortNumber } from './svg.js';

/** An element with attributes (`on*` as listeners) and children (strings become text). */
export function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) {
      node.addEventListener(name.slice(2), value);
    } else {
      node.setAttribute(name, value === true ? '' : String(value));
    }
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
  }
  return node;
}

function json(value) {
  return el('pre', {}, JSON.stringify(value, null, 2));
}

function table(headings, rows, attributes = {}) {
  return el('table', attributes,
    el('thead', {}, el('tr', {}, headings.map((heading) => el('th', {}, heading)))),
    el('tbody', {}, rows));
}

function entityLink(reference) {
  const slash = reference.indexOf('/');
  const type = reference.slice(0, slash);
  const id = reference.slice(slash + 1);
  return el('a', { href: `#/entity/${segment(type)}/${segment(id)}` }, reference);
}

function time(millis) {
  return new Date(millis).toISOString().replace('T', ' ').replace('Z', '');
}

// ------------------------------------------------------------------ types

export async function typesPage(main) {
  const { types } = await getJson('/v1/types');
  main.append(el('h1', {}, 'Types'));
  if (types.length === 0) {
    main.append(el('p', { class: 'muted' }, 'No type is declared. Entities of undeclared types are schemaless.'));
  }
  for (const type of types) {
    const name = type.name ?? type.type;
    const keys = Object.entries(type.keys ?? {});
    const actions = Object.keys(type.actions ?? {});
    main.append(el('section', { class: 'type', 'data-type': name },
      el('h2', {}, name, ' ', el('a', { href: `#/entities/${segment(name)}` }, 'browse')),
      keys.length === 0 ? null : table(['key', 'kind', 'details'], keys.map(([key, spec]) =>
        el('tr', {}, el('td', { class: 'mono' }, key), el('td', {}, spec.kind ?? ''),
          el('td', { class: 'mono' }, JSON.stringify(Object.fromEntries(
            Object.entries(spec).filter(([field]) => field !== 'kind')))))),
      ),
      actions.length === 0 ? null : el('p', {}, 'Actions: ', actions.map((action, i) => [i ? ', ' : '', el('code', {}, action)])),
      el('details', {}, el('summary', {}, 'Specification'), json(type))));
  }
}

// ------------------------------------------------------------------ entities

export async function entitiesPage(main, [type], query) {
  const { types } = await getJson('/v1/types');
  main.append(el('h1', {}, type ? `Entities of ${type}` : 'Entities'));
  const input = el('input', { id: 'type-name', list: 'type-names', value: type ?? '', placeholder: 'type', required: true });
  main.append(el('form', {
    class: 'row',
    onsubmit: (event) => {
      event.preventDefault();
      location.hash = `#/entities/${segment(input.value.trim())}`;
    },
  }, el('label', {}, 'Type ', input),
  el('datalist', { id: 'type-names' }, types.map((spec) => el('option', { value: spec.name ?? spec.type }))),
  el('button', { type: 'submit' }, 'List')));
  if (!type) {
    main.append(el('p', { class: 'muted' }, 'Choose a declared type, or name any type (schemaless types are listed too).'));
    return;
  }
  const after = query.get('after');
  const limit = 25;
  const page = await getJson(`/v1/entities/${segment(type)}?limit=${limit}&states=true${after ? `&after=${segment(after)}` : ''}`);
  const rows = page.entities.map((entity) => el('tr', { 'data-id': entity.id },
    el('td', {}, el('a', { href: `#/entity/${segment(type)}/${segment(entity.id)}` }, entity.id)),
    el('td', { class: 'mono' }, String(entity.version)),
    el('td', { class: 'mono' }, JSON.stringify(entity.state))));
  main.append(el('section', {},
    page.entities.length === 0 ? el('p', { class: 'muted' }, 'No entity here.')
      : table(['id', 'version', 'state'], rows, { id: 'entity-list' }),
    el('div', { class: 'row' },
      after ? el('a', { href: `#/entities/${segment(type)}` }, 'first page') : null,
      page.next ? el('a', { id: 'next-page', href: `#/entities/${segment(type)}?after=${segment(page.next)}` }, 'next page') : null)));
}

// ------------------------------------------------------------------ one entity

const HISTORY_VERSIONS = 20;

export async function entityPage(main, [type, id], query) {
  const base = `/v1/entities/${segment(type)}/${segment(id)}`;
  const [entity, versions] = await Promise.all([getJson(base), getJson(`${base}/versions?limit=${HISTORY_VERSIONS}`)]);
  main.append(el('h1', {}, `${type}/${id}`));
  main.append(el('div', { class: 'row' },
    el('a', { href: `#/entities/${segment(type)}` }, `all ${type}`),
    el('a', { href: `#/dependencies/${segment(type)}/${segment(id)}` }, 'dependencies')));
  main.append(el('div', { class: 'two' },
    el('section', {}, el('h2', {}, 'State at version ', el('span', { id: 'entity-version', class: 'mono' }, String(entity.version))),
      el('div', { id: 'entity-state' }, json(entity.state))),
    el('section', { id: 'versions' }, el('h2', {}, 'Versions in the journal'),
      versions.versions.length === 0 ? el('p', { class: 'muted' }, 'None left (history truncated).')
        : el('p', { class: 'mono' }, versions.versions.join(', ')),
      versions.next ? el('p', { class: 'muted' }, `older versions exist (before ${versions.next})`) : null)));
  const keys = Object.keys(entity.state ?? {});
  const key = query.get('key') ?? keys[0];
  if (!key) return;
  const select = el('select', {
    id: 'history-key',
    onchange: () => { location.hash = `#/entity/${segment(type)}/${segment(id)}?key=${segment(select.value)}`; },
  }, keys.map((name) => el('option', { value: name, selected: name === key }, name)));
  // The key's value at each version, oldest first: one snapshot read (?at=) per version.
  const chronological = [...versions.versions].reverse();
  const states = await Promise.all(chronological.map((version) =>
    getJson(`${base}?at=${version}`).then((read) => read.state, (error) => (error.status === 404 ? undefined : Promise.reject(error)))));
  const history = chronological.map((version, i) => ({ version, value: states[i] === undefined ? undefined : states[i][key] }));
  // Plotted in version order, one step per version (timestamps are not evenly spaced in time).
  const numeric = history.filter((point) => typeof point.value === 'number');
  const section = el('section', { id: 'history' }, el('h2', {}, 'History of ', select),
    numeric.length >= 2 ? lineChart(numeric.map((point, i) => ({ x: i, y: point.value })), { width: 560, height: 160, xLabel: (x) => String(numeric[x].version) }) : null,
    table(['version', 'value'], history.map((point) => el('tr', {},
      el('td', { class: 'mono' }, String(point.version)),
      el('td', { class: 'mono' }, point.value === undefined ? '(absent)' : JSON.stringify(point.value)))), { id: 'history-table' }));
  main.append(section);
}

// ------------------------------------------------------------------ dependencies

export async function dependenciesPage(main, [type, id]) {
  const body = await getJson(`/v1/entities/${segment(type)}/${segment(id)}/dependencies`);
  main.append(el('h1', {}, `Dependencies of ${body.entity}`));
  main.append(el('div', { class: 'row' }, el('a', { href: `#/entity/${segment(type)}/${segment(id)}` }, 'back to the entity')));
  if (body.leads.length === 0 && body.follows.length === 0) {
    main.append(el('p', { class: 'muted', id: 'no-dependencies' }, 'This entity leads and follows no dependency.'));
    return;
  }
  main.append(el('section', { id: 'dependency-graph' }, dependencyGraph(body.entity, body.leads, body.follows)));
  const rows = [...body.follows.map((dependency) => ['follows', dependency]), ...body.leads.map((dependency) => ['leads', dependency])]
    .map(([role, dependency]) => el('tr', { 'data-dependency': dependency.id },
      el('td', {}, role), el('td', {}, dependency.kind), el('td', {}, dependency.function ?? ''),
      el('td', {}, entityLink(dependency.leader.entity), `.${dependency.leader.key}`),
      el('td', {}, entityLink(dependency.follower.entity), `.${dependency.follower.key}`),
      el('td', { class: 'mono' }, dependency.contribution === undefined ? '' : JSON.stringify(dependency.contribution))));
  main.append(el('section', {}, table(['role', 'kind', 'function', 'leader', 'follower', 'contribution'], rows)));
}

// ------------------------------------------------------------------ transactions

export async function transactionsPage(main, parts, query) {
  const before = query.get('before');
  const page = await getJson(`/v1/transactions/recent?limit=50${before ? `&before=${segment(before)}` : ''}`);
  main.append(el('h1', {}, 'Recent transactions'));
  main.append(el('p', { class: 'muted' }, 'The last transactions this node coordinated, newest first (kept in memory; see troupe.recent-transactions).'));
  const rows = page.transactions.map((transaction) => el('tr', { 'data-tx': transaction.txId, 'data-outcome': transaction.outcome },
    el('td', { class: 'mono' }, String(transaction.txId)),
    el('td', {}, el('span', { class: `badge ${transaction.outcome}` }, transaction.outcome)),
    el('td', {}, transaction.reason ?? transaction.code ?? ''),
    el('td', {}, transaction.kind),
    el('td', {}, transaction.entities.map((entity, i) => [i ? ', ' : '', entityLink(entity)]),
      transaction.entityCount > transaction.entities.length ? ` and ${transaction.entityCount - transaction.entities.length} more` : ''),
    el('td', { class: 'mono' }, transaction.version ? String(transaction.version) : ''),
    el('td', { class: 'mono nowrap' }, `${(transaction.durationMicros / 1000).toFixed(1)} ms`),
    el('td', { class: 'mono nowrap' }, time(transaction.finishedAtMillis)),
    el('td', { class: 'muted' }, transaction.message ?? '')));
  main.append(el('section', {},
    page.transactions.length === 0 ? el('p', { class: 'muted' }, 'No transaction yet.')
      : table(['txId', 'outcome', 'reason', 'kind', 'entities', 'version', 'took', 'finished (UTC)', 'message'], rows, { id: 'transactions' }),
    page.next ? el('a', { href: `#/transactions?before=${page.next}` }, 'older') : null));
}

// ------------------------------------------------------------------ metrics

const CHARTS = [
  { title: 'HTTP requests per second', metric: 'troupe_http_requests_total', rate: true },
  { title: 'Commits per second', metric: 'troupe_commits_total', rate: true },
  { title: 'Transactions per second', metric: 'troupe_transactions_total', rate: true },
  { title: 'Open transactions', metric: 'troupe_transactions_open' },
  { title: 'Active entities', metric: 'troupe_active_entities' },
  { title: 'Estimated memory (bytes)', metric: 'troupe_memory_estimated_bytes' },
  { title: 'Replication lag (ms)', metric: 'troupe_replication_lag_millis' },
];
const SAMPLES_KEPT = 60;
const samples = [];

/** Samples /metrics now and every `intervalMillis` while the page shows; the charts redraw. */
export async function metricsPage(main, parts, query, { intervalMillis = 1000, stillShown }) {
  main.append(el('h1', {}, 'Metrics'));
  main.append(el('p', { class: 'muted' }, `From /metrics every ${intervalMillis / 1000} s while this page is open; the last ${SAMPLES_KEPT} samples.`));
  const grid = el('div', { class: 'grid', id: 'charts' });
  main.append(grid);
  const sample = async () => {
    samples.push({ at: Date.now(), metrics: parseMetrics(await getText('/metrics')) });
    while (samples.length > SAMPLES_KEPT) samples.shift();
    draw(grid);
  };
  await sample();
  const timer = setInterval(() => {
    if (!stillShown()) {
      clearInterval(timer);
      return;
    }
    sample().catch(() => clearInterval(timer));
  }, intervalMillis);
}

function draw(grid) {
  grid.replaceChildren();
  const start = samples[0].at;
  for (const chart of CHARTS) {
    const values = samples.map((s) => ({ at: s.at, value: total(s.metrics, chart.metric) }));
    if (values.at(-1).value === null) continue;
    let points;
    if (chart.rate) {
      points = [];
      for (let i = 1; i < values.length; i++) {
        const seconds = (values[i].at - values[i - 1].at) / 1000;
        if (seconds > 0 && values[i].value !== null && values[i - 1].value !== null) {
          points.push({ x: (values[i].at - start) / 1000, y: Math.max(0, (values[i].value - values[i - 1].value) / seconds) });
        }
      }
    } else {
      points = values.filter((v) => v.value !== null).map((v) => ({ x: (v.at - start) / 1000, y: v.value }));
    }
    const latest = values.at(-1).value;
    grid.append(el('section', { class: 'chart', 'data-metric': chart.metric },
      el('h3', {}, chart.title),
      el('div', { class: 'value' }, chart.rate ? `total ${shortNumber(latest)}` : `now ${shortNumber(latest)}`),
      lineChart(points, { xLabel: (x) => `${Math.round(x)} s` })));
  }
}

// ------------------------------------------------------------------ data centres and cluster

export async function replicationPage(main) {
  const status = await getJson('/v1/replication/status');
  main.append(el('h1', {}, `Data centre ${status.dataCentre}`));
  main.append(el('section', {}, table(['log entries', 'pending remote transactions', 'applying', 'stable vector age'], [
    el('tr', {}, el('td', {}, String(status.logEntries)), el('td', {}, String(status.pendingRemoteTransactions)),
      el('td', {}, String(status.applyingTransactions)), el('td', {}, `${status.stableVectorAgeMillis} ms`))])));
  main.append(el('h2', {}, 'Peers'));
  main.append(el('section', {}, status.peers.length === 0 ? el('p', { class: 'muted', id: 'no-peers' }, 'No peer data centre.')
    : table(['peer', 'url', 'lag (transactions)', 'lag', 'received', 'applied'], status.peers.map((peer) => el('tr', { 'data-peer': peer.name },
      el('td', {}, peer.name), el('td', { class: 'mono' }, peer.url ?? ''), el('td', {}, String(peer.lagTransactions)),
      el('td', {}, `${peer.lagMillis} ms`), el('td', { class: 'mono' }, String(peer.receivedTimestamp)),
      el('td', { class: 'mono' }, String(peer.appliedTimestamp)))))));
  main.append(el('details', {}, el('summary', {}, 'Vectors'), json({ received: status.receivedVector, applied: status.appliedVector, stable: status.stableVector })));
}

export async function clusterPage(main) {
  const cluster = await getJson('/v1/cluster');
  main.append(el('h1', {}, 'Cluster'));
  main.append(el('p', {}, `This node: ${cluster.self}; ${cluster.partitionCount} partitions.`));
  main.append(el('section', {}, table(['member', 'status', 'reachable', 'node id', 'partitions', 'active entities', 'heap'],
    cluster.members.map((member) => el('tr', {},
      el('td', { class: 'mono' }, member.address), el('td', {}, member.status), el('td', {}, member.reachable ? 'yes' : 'no'),
      el('td', {}, String(member.nodeId)), el('td', {}, String(member.partitions.length)),
      el('td', {}, member.node ? String(member.node.activeEntities) : '?'),
      el('td', {}, member.node ? `${shortNumber(member.node.heapUsedBytes)} / ${shortNumber(member.node.heapMaxBytes)}` : '?'))))));
}
