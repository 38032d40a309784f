// The frame every page is drawn in: the main element, titles, navigation, loading and errors.

import { clear, h } from './dom.js';
import { ApiError } from './api.js';

export const appEl = document.getElementById('app');
let navToken = 0;
export let current = null; // { name, key, update? }

// A render context: `alive()` is false once the user has navigated elsewhere,
// so late answers of old requests are dropped.
export function makeCtx(name, parsed) {
  const token = ++navToken;
  return {
    name,
    parsed,
    alive: () => token === navToken,
    ready() {
      if (token !== navToken) return;
      appEl.setAttribute('aria-busy', 'false');
      appEl.dataset.loaded = location.hash || '#/';
    },
  };
}

export function setTitle(t) {
  document.title = t ? t + ' \u2014 memtrace' : 'memtrace';
}

export function setNav(which) {
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === which) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

export function loadingView(text) {
  return h('p', { class: 'loading', role: 'status' }, text || 'Loading\u2026');
}

export function notFoundView(message) {
  setTitle('Not found');
  return h('section', { class: 'notfound', 'data-testid': 'not-found' },
    h('h1', null, 'Not found'),
    h('p', null, message || 'There is nothing at this address.'),
    h('p', null, h('a', { href: '#/' }, 'Back to the traces')));
}

export function errorView(err) {
  if (err instanceof ApiError && err.status === 404) return notFoundView(err.message);
  return h('section', { class: 'errorbox', 'data-testid': 'error', role: 'alert' },
    h('h1', null, 'Something went wrong'),
    h('pre', { class: 'errmsg' }, err && err.message ? err.message : String(err)));
}

// Shows an error in place of the page (for the page's main request).
export function showError(ctx, err) {
  if (!ctx.alive()) return;
  clear(appEl).appendChild(errorView(err));
  ctx.ready();
}

// Remembers the page now shown (the router sets it as it opens a page).
export function setCurrent(page) {
  current = page;
}
