// Colors of categories, and badges of error types.

import { h } from './dom.js';

const KNOWN_HUES = {
  // variable categories
  message: 210, user_input: 210, query: 265, question: 265, prompt: 190,
  memory_entry: 140, memory_store: 140, memory: 140, memory_context: 170, buffer: 45,
  extracted_facts: 95, memory_decision: 30, boundary_decision: 55, prediction: 330,
  answer: 330, golden_answers: 300, judge_response: 0, judge_score: 0, variable: 220,
  sentinel: 0, retrieved_memories: 170,
  // op categories
  extraction: 95, update: 30, mutation: 30, deletion: 0, retrieval: 170, evaluation: 300,
  generation: 330, llm_call: 250, boundary_detection: 55, ingest: 210, link: 190, qa: 330,
  memory_construction: 140, session: 220,
};

function hueOf(cat) {
  const c = String(cat || '').toLowerCase();
  if (c in KNOWN_HUES) return KNOWN_HUES[c];
  let x = 0;
  for (let i = 0; i < c.length; i++) x = (x * 31 + c.charCodeAt(i)) >>> 0;
  return x % 360;
}

export function catColors(cat) {
  if (!cat) return { fill: 'hsl(220 10% 95%)', stroke: 'hsl(220 8% 55%)', text: 'hsl(220 10% 25%)' };
  const hue = hueOf(cat);
  return { fill: `hsl(${hue} 70% 93%)`, stroke: `hsl(${hue} 45% 42%)`, text: `hsl(${hue} 55% 24%)` };
}

export function chip(cat, extra) {
  const c = catColors(cat);
  return h('span', {
    class: 'chip' + (extra ? ' ' + extra : ''),
    style: { '--chip-bg': c.fill, '--chip-fg': c.text, '--chip-bd': c.stroke },
    title: cat ? 'category: ' + cat : 'no category',
  }, cat || '—');
}

export const ERROR_TYPES = ['ExtractionError', 'UpdateError', 'DeletionError', 'RetrievalError', 'ResponseError'];

export function errorBadge(t) {
  if (!t) return h('span', { class: 'muted' }, '—');
  return h('span', { class: 'etype etype-' + String(t).replace(/[^A-Za-z]/g, '') }, t);
}
