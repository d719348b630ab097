/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { compactJson, h } from '../core/dom';

/**
 * How much of a JSON value a tree shows.
 */
export interface IJsonTreeLimits {
  /** Levels shown; deeper containers are summarised. */
  depth: number;
  /** Items shown per object or array; the rest are counted. */
  items: number;
  /** Longest string shown. */
  stringChars: number;
}

/**
 * The most tree nodes one call of {@link renderJsonTree} builds, whatever the
 * limits: a guard against values with many wide levels.
 */
export const MAX_TREE_NODES = 5000;

/**
 * Render a JSON value as a tree of nested lists.
 *
 * @param value - The value (anything: non-JSON values are described).
 * @param limits - What to show.
 * @returns The tree, and whether anything was left out.
 */
export function renderJsonTree(
  value: unknown,
  limits: IJsonTreeLimits
): { node: HTMLElement; clipped: boolean } {
  const state = { nodes: 0, clipped: false };
  const node = h(
    'div',
    { class: 'jp-xcsh-JsonTree' },
    renderValue(value, 0, limits, state)
  );
  return { node, clipped: state.clipped };
}

interface ITreeState {
  nodes: number;
  clipped: boolean;
}

function renderValue(
  value: unknown,
  depth: number,
  limits: IJsonTreeLimits,
  state: ITreeState
): HTMLElement {
  state.nodes++;
  if (Array.isArray(value)) {
    return renderContainer(
      value.map((item, i) => [String(i), item] as [string, unknown]),
      '[',
      ']',
      depth,
      limits,
      state
    );
  }
  if (typeof value === 'object' && value !== null) {
    let entries: [string, unknown][];
    try {
      entries = Object.entries(value);
    } catch {
      entries = [];
    }
    return renderContainer(entries, '{', '}', depth, limits, state);
  }
  return renderScalar(value, limits, state);
}

function renderContainer(
  entries: [string, unknown][],
  open: string,
  close: string,
  depth: number,
  limits: IJsonTreeLimits,
  state: ITreeState
): HTMLElement {
  const unit = open === '[' ? 'item' : 'key';
  if (entries.length === 0) {
    return h('span', { class: 'jp-xcsh-JsonPunct' }, open + close);
  }
  if (depth >= limits.depth || state.nodes >= MAX_TREE_NODES) {
    state.clipped = true;
    const n = entries.length;
    return h(
      'span',
      { class: 'jp-xcsh-JsonSummary' },
      `${open}… ${n} ${unit}${n === 1 ? '' : 's'}${close}`
    );
  }
  const shown = entries.slice(0, limits.items);
  const list = h('ul', { class: 'jp-xcsh-JsonList' });
  for (const [key, item] of shown) {
    if (state.nodes >= MAX_TREE_NODES) {
      state.clipped = true;
      break;
    }
    list.appendChild(
      h(
        'li',
        {},
        h('span', { class: 'jp-xcsh-JsonKey' }, key),
        h('span', { class: 'jp-xcsh-JsonPunct' }, ': '),
        renderValue(item, depth + 1, limits, state)
      )
    );
  }
  const rest = entries.length - list.childElementCount;
  if (rest > 0) {
    state.clipped = true;
    list.appendChild(
      h('li', { class: 'jp-xcsh-JsonMore' }, `… ${rest} more ${unit}s`)
    );
  }
  return h(
    'span',
    { class: 'jp-xcsh-JsonContainer' },
    h('span', { class: 'jp-xcsh-JsonPunct' }, open),
    list,
    h('span', { class: 'jp-xcsh-JsonPunct' }, close)
  );
}

function renderScalar(
  value: unknown,
  limits: IJsonTreeLimits,
  state: ITreeState
): HTMLElement {
  if (typeof value === 'string') {
    let text = value;
    if (text.length > limits.stringChars) {
      state.clipped = true;
      text = `${text.slice(0, limits.stringChars)}…`;
    }
    return h('span', { class: 'jp-xcsh-JsonString' }, JSON.stringify(text));
  }
  if (typeof value === 'number' || typeof value === 'bigint') {
    return h('span', { class: 'jp-xcsh-JsonNumber' }, String(value));
  }
  if (typeof value === 'boolean' || value === null) {
    return h('span', { class: 'jp-xcsh-JsonLiteral' }, String(value));
  }
  // undefined, functions, symbols: not JSON, described rather than shown.
  return h('span', { class: 'jp-xcsh-JsonLiteral' }, compactJson(value, 80));
}
