// Links to nodes, and lists of them that show the first few.

import { asList, h } from './dom.js';
import { routes } from './routes.js';

export function nodeLink(gid, id, dir) {
  return h('a', {
    class: 'nodeid mono', href: routes.graph(gid, id, dir || 'backward', 2),
    title: 'Open the provenance graph from ' + id, 'data-testid': 'node-link',
  }, id);
}

// A list of node ids, at most `max` shown, the rest behind a button.
export function idList(ids, make, max = 6) {
  const list = asList(ids);
  const span = h('span', { class: 'idlist' });
  const shown = list.slice(0, max);
  shown.forEach((id, i) => { if (i) span.append(', '); span.append(make(id)); });
  if (!list.length) span.append(h('span', { class: 'muted' }, 'none'));
  if (list.length > max) {
    const more = h('button', { type: 'button', class: 'linkbtn' }, `+${list.length - max} more`);
    more.addEventListener('click', () => {
      more.remove();
      list.slice(max).forEach((id) => span.append(', ', make(id)));
    });
    span.append(' ', more);
  }
  return span;
}
