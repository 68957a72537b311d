// The console's shell: hash routes to pages, the token prompt, and which panels this server has.
//
// Routes: #/types, #/entities/{type}[?after=ID], #/entity/{type}/{id}[?key=KEY],
// #/dependencies/{type}/{id}, #/transactions[?before=CURSOR], #/metrics, #/replication, #/cluster.
// A page is marked ready (main[data-ready] = the page's name) once it shows its data, or the
// error that stopped it (main[data-error]); the browser test waits for that mark.

import { getText, setToken, token } from './api.js';
import { parseMetrics } from './metrics.js';
import {
  clusterPage, dependenciesPage, el, entitiesPage, entityPage, metricsPage, replicationPage,
  transactionsPage, typesPage,
} from './pages.js';

const PAGES = {
  types: typesPage,
  entities: entitiesPage,
  entity: entityPage,
  dependencies: dependenciesPage,
  transactions: transactionsPage,
  metrics: metricsPage,
  replication: replicationPage,
  cluster: clusterPage,
};
/** The nav entry a page highlights. */
const NAV_OF = { entity: 'entities', dependencies: 'entities' };

const main = document.getElementById('page');
const tokenForm = document.getElementById('token-form');
const tokenInput = document.getElementById('token');
const forget = document.getElementById('forget-token');
let shown = 0;

async function show() {
  const mine = ++shown;
  const hash = location.hash.startsWith('#/') ? location.hash.slice(2) : 'types';
  const question = hash.indexOf('?');
  const path = question < 0 ? hash : hash.slice(0, question);
  const query = new URLSearchParams(question < 0 ? '' : hash.slice(question + 1));
  const parts = path.split('/').filter((part) => part !== '').map(decodeURIComponent);
  const name = parts.shift() ?? 'types';
  for (const link of document.querySelectorAll('#nav a')) {
    link.classList.toggle('current', link.dataset.page === (NAV_OF[name] ?? name));
  }
  main.dataset.ready = '';
  delete main.dataset.error;
  main.replaceChildren(el('p', { class: 'muted' }, 'Loading…'));
  const render = PAGES[name];
  const target = document.createElement('div');
  try {
    if (!render) {
      throw new Error(`the console has no page '${name}'`);
    }
    await render(target, parts, query, { stillShown: () => mine === shown });
    if (mine !== shown) return;
    main.replaceChildren(...target.childNodes);
  } catch (error) {
    if (mine !== shown) return;
    if (error.status === 401) {
      main.replaceChildren();
      return; // The token prompt is up; submitting it shows the page again.
    }
    main.replaceChildren(el('p', { class: 'problem', id: 'page-error' }, error.message));
    main.dataset.error = 'true';
  }
  main.dataset.ready = name;
}

/**
 * Shows the panels this server has: data centres when it replicates, cluster members when it is
 * a cluster member. Decided from /metrics (those metrics exist only then), so that no probe of a
 * missing route fails.
 */
async function discoverPanels() {
  try {
    const metrics = parseMetrics(await getText('/metrics'));
    const names = [...metrics.keys()];
    document.querySelector('#nav a[data-page="replication"]').hidden =
      !names.some((metric) => metric.startsWith('troupe_replication_'));
    document.querySelector('#nav a[data-page="cluster"]').hidden =
      !names.some((metric) => metric.startsWith('troupe_cluster_'));
  } catch (ignored) {
    // A 401 raises the token prompt; the panels are decided again once a token is given.
  }
}

function askForToken(problem) {
  tokenForm.hidden = false;
  document.getElementById('token-problem').textContent = problem;
  tokenInput.focus();
}

window.addEventListener('troupe-unauthorized', (event) => {
  askForToken(token() ? `The server refused this token: ${event.detail.message}` : '');
});

tokenForm.addEventListener('submit', (event) => {
  event.preventDefault();
  setToken(tokenInput.value.trim());
  tokenInput.value = '';
  tokenForm.hidden = true;
  forget.hidden = false;
  discoverPanels();
  show();
});

forget.addEventListener('click', () => {
  setToken(null);
  forget.hidden = true;
  askForToken('');
});

forget.hidden = !token();
window.addEventListener('hashchange', show);
discoverPanels();
show();
