// Building the page: elements with their text shown escaped, and small text formatters.

const SVG_NS = 'http://www.w3.org/2000/svg';

// Control characters (C0 but line breaks and tabs, DEL, C1), bidirectional
// controls and the line and paragraph separators are shown escaped, as
// \u{1b}, the way the command line shows them: a value cannot hide or
// reorder what is shown. Every text and attribute the helpers set goes
// through this; form values stay exact.
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;
function visible(v) {
  return String(v).replace(HIDDEN, (c) => '\\u{' + c.codePointAt(0).toString(16) + '}');
}

// Sets attributes and properties on an element. `on*` keys that hold functions
// become event listeners, `text` sets textContent, `style` takes an object.
function applyAttrs(el, attrs) {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2).toLowerCase(), v);
    } else if (k === 'text') {
      el.textContent = visible(v);
    } else if (k === 'style' && typeof v === 'object') {
      for (const [p, pv] of Object.entries(v)) el.style.setProperty(p, pv);
    } else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'disabled') {
      el[k] = v;
    } else {
      el.setAttribute(k, v === true ? '' : (k === 'href' || k.startsWith('data-') ? String(v) : visible(v)));
    }
  }
}

function appendKids(el, kids) {
  for (const c of kids) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) appendKids(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(visible(c)));
  }
}

// h('div', {class: 'x'}, 'text', child, [more children])
export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  applyAttrs(el, attrs);
  appendKids(el, kids);
  return el;
}

export function s(tag, attrs, ...kids) {
  const el = document.createElementNS(SVG_NS, tag);
  applyAttrs(el, attrs);
  appendKids(el, kids);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export const enc = encodeURIComponent;

export function truncate(text, n) {
  const t = String(text == null ? '' : text).replace(/\s+/g, ' ').trim();
  return t.length > n ? t.slice(0, Math.max(1, n - 1)) + '\u2026' : t;
}

export function fmtNum(n) {
  return typeof n === 'number' ? n.toLocaleString('en-US') : (n == null ? '' : String(n));
}

export function asList(v) {
  if (v == null) return [];
  return Array.isArray(v) ? v : [v];
}

export function shortOp(id) {
  const t = String(id || '');
  return t.length > 16 ? t.slice(0, 12) + '\u2026' + t.slice(-4) : t;
}
