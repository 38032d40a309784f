// memtrace serve: the browser viewer of a memtrace database, loaded as ES modules.
// Plain ES2020, no dependencies, no build step. Every piece of data reaches the
// DOM through textContent or attributes (never innerHTML), so it is escaped.
// This module picks the page for the address after `#` and starts the viewer.

import { clear } from './dom.js';
import { parseHash } from './routes.js';
import { API } from './api.js';
import { appEl, current, makeCtx, notFoundView, setCurrent, setNav, showError } from './shell.js';
import { tracesPage } from './traces-page.js';
import { tracePage } from './trace-page.js';
import { casePage } from './case-page.js';
import { graphPage } from './graph-page.js';
import { queryPage } from './query-page.js';

function route() {
  const parsed = parseHash();
  const [head, ...rest] = parsed.segs;
  let name;
  if (head === undefined || head === '') name = 'traces';
  else if (head === 'trace' && rest.length === 1) name = 'trace';
  else if (head === 'case' && rest.length === 2) name = 'case';
  else if (head === 'graph' && rest.length === 1) name = 'graph';
  else if (head === 'query' && rest.length === 0) name = 'query';
  else name = 'unknown';

  // Same page, only the query changed: let the page update itself in place
  // (keeps focus in the filter controls).
  if (current && current.name === name && current.update && current.path === parsed.segs.join('/')) {
    const ctx = makeCtx(name, parsed);
    appEl.setAttribute('aria-busy', 'true');
    current.update(ctx);
    return;
  }
  const ctx = makeCtx(name, parsed);
  appEl.setAttribute('aria-busy', 'true');
  clear(appEl);
  setCurrent({ name, path: parsed.segs.join('/') });
  setNav(name === 'query' ? 'query' : (name === 'unknown' ? '' : 'traces'));
  try {
    switch (name) {
      case 'traces': tracesPage(ctx); break;
      case 'trace': tracePage(ctx, rest[0]); break;
      case 'case': casePage(ctx, rest[0], rest[1]); break;
      case 'graph': graphPage(ctx, rest[0]); break;
      case 'query': queryPage(ctx); break;
      default:
        appEl.appendChild(notFoundView('No page at ' + (location.hash || '#/') + '.'));
        ctx.ready();
    }
  } catch (e) {
    showError(ctx, e);
  }
}

async function loadHealth() {
  const el = document.querySelector('[data-testid="db-name"]');
  try {
    const hh = await API.health();
    el.textContent = hh.db ? hh.db : '';
    el.title = `database ${hh.db || ''}${hh.version ? ', memtrace ' + hh.version : ''}${hh.traces != null ? ', ' + hh.traces + ' traces' : ''}`;
  } catch (e) {
    el.textContent = 'server unreachable';
    el.classList.add('bad');
  }
}

window.addEventListener('hashchange', route);
loadHealth();
route();
