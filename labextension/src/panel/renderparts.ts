/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { TranslationBundle } from '@jupyterlab/translation';

import { clipHead, clipTail, Expanded, splitLines } from './collapse';
import { Child, h } from '../core/dom';
import type {
  ActivityCall,
  INotebookCall,
  IPythonCall
} from '../core/activity';

/**
 * The language a text block is highlighted as; `null` for plain text.
 */
export type BlockLanguage = 'python' | 'markdown' | null;

/**
 * What the renderers need from the panel: the expanded state of each part,
 * highlighting and the actions of links and buttons.
 */
export interface IRenderContext {
  /**
   * The extension's strings in the lab's language.
   */
  readonly trans: TranslationBundle;

  /**
   * Whether the part `key` is expanded.
   *
   * @param key - A key unique in the panel, e.g. `<callId>/cell/0/code`.
   * @param byDefault - The state of a part never toggled.
   */
  isOpen(key: string, byDefault?: boolean): boolean;

  /**
   * Flip the expanded state of the part `key` (and re-render its call).
   */
  toggle(key: string, byDefault?: boolean): void;

  /**
   * Fill `element` with `code`, highlighted when a highlighter is available.
   */
  highlight(code: string, language: BlockLanguage, element: HTMLElement): void;

  /**
   * Open a notebook, scrolled to a cell when `cellIndex` is not null.
   */
  openNotebook(path: string, cellIndex: number | null): void;

  /**
   * Open a file of the contents root (an artifact) in the lab.
   */
  openArtifact(path: string): void;

  /**
   * Cancel a running python call.
   */
  interrupt(call: IPythonCall): void;

  /**
   * Answer the prompt a python call waits on.
   */
  answer(call: IPythonCall, value: string): void;

  /**
   * Undo a notebook call's changes (the review's undo).
   */
  undo(call: INotebookCall): void;

  /**
   * Keep a notebook call's changes (the review's keep).
   */
  keep(call: INotebookCall): void;
}

/**
 * Renders one entry of the activity panel (one kind of entry: `notebook`, `python`, ...).
 */
export type CallRenderer = (
  call: ActivityCall,
  ctx: IRenderContext
) => HTMLElement;

/**
 * A button that expands or collapses the part `key`.
 *
 * The `data-xcsh-key` attribute lets the panel give the focus back to the
 * button after its call is re-rendered.
 */
export function toggleButton(
  ctx: IRenderContext,
  key: string,
  label: string,
  options: { byDefault?: boolean; className?: string; title?: string } = {}
): HTMLButtonElement {
  const open = ctx.isOpen(key, options.byDefault);
  const button = h(
    'button',
    {
      type: 'button',
      class: options.className ?? 'jp-xcsh-More',
      'aria-expanded': String(open),
      'data-xcsh-key': key,
      title: options.title,
      // An icon-only toggle still needs a name.
      'aria-label': label === '' ? options.title : undefined
    },
    label
  );
  button.addEventListener('click', event => {
    event.stopPropagation();
    ctx.toggle(key, options.byDefault);
  });
  return button;
}

/**
 * The options of a text block.
 */
export interface ITextBlockOptions {
  /** Lines shown while collapsed. */
  lines: number;
  /** Which end of the text is kept while collapsed. */
  keep: 'head' | 'tail';
  /** The highlighting language. */
  language?: BlockLanguage;
  /** An extra class of the `<pre>`. */
  className?: string;
  /** What the block holds, for screen readers. */
  label?: string;
}

/**
 * A block of text, collapsed to some lines, with a toggle when it is longer.
 */
export function textBlock(
  ctx: IRenderContext,
  key: string,
  text: string,
  options: ITextBlockOptions
): HTMLElement {
  const total = splitLines(text).length;
  const collapsible = total > options.lines;
  const open = collapsible && ctx.isOpen(key, false);
  const limit = open ? Expanded.LINES : options.lines;
  const clipped =
    options.keep === 'head' ? clipHead(text, limit) : clipTail(text, limit);
  const pre = h('pre', {
    class: `jp-xcsh-Text ${options.className ?? ''}`.trim(),
    'aria-label': options.label
  });
  ctx.highlight(clipped.text, options.language ?? null, pre);

  const parts: Child[] = [];
  if (collapsible) {
    const hidden = total - options.lines;
    const trans = ctx.trans;
    const label = open
      ? trans.__('Show less')
      : options.keep === 'head'
        ? trans._n('Show %1 more line', 'Show %1 more lines', hidden)
        : trans._n('Show %1 earlier line', 'Show %1 earlier lines', hidden);
    const button = toggleButton(ctx, key, label);
    const note =
      open && clipped.hidden > 0
        ? h(
            'div',
            { class: 'jp-xcsh-Note' },
            ctx.trans._n(
              '%1 more line not shown',
              '%1 more lines not shown',
              clipped.hidden
            )
          )
        : null;
    if (options.keep === 'tail') {
      parts.push(button, note, pre);
    } else {
      parts.push(pre, note, button);
    }
  } else {
    parts.push(pre);
  }
  return h('div', { class: 'jp-xcsh-TextBlock' }, ...parts);
}

/**
 * The time of day a call was first seen, e.g. `14:03` (the lab's own form of
 * it, with the seconds, on hover).
 */
export function timeLabel(time: number): HTMLElement {
  const date = new Date(time);
  // Hours and minutes in the call's line, on a 24-hour clock: no AM/PM, so
  // the line keeps that width for the call's target. The seconds on hover.
  return h(
    'time',
    {
      class: 'jp-xcsh-Time',
      datetime: date.toISOString(),
      title: date.toLocaleTimeString()
    },
    date.toLocaleTimeString([], {
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23'
    })
  );
}

/**
 * The header of a call: one line, readable at the panel's default width: the
 * collapse toggle, a status dot, the title (agent, tool, target; cut with an
 * ellipsis, whole on hover), the details and the time. A click on the line
 * (off its buttons) expands the call to its code and outputs.
 *
 * @param options.open - Whether the call is expanded until the person says
 *   otherwise (collapsed by default).
 */
export function callHeader(
  ctx: IRenderContext,
  callId: string,
  options: {
    status: string;
    statusLabel: string;
    title: HTMLElement;
    details: Child[];
    time: number;
    open?: boolean;
  }
): HTMLElement {
  const byDefault = options.open ?? false;
  const open = ctx.isOpen(callId, byDefault);
  if (!options.title.title) {
    options.title.title = options.title.textContent ?? '';
  }
  const header = h(
    'div',
    { class: 'jp-xcsh-CallHeader' },
    h(
      'div',
      { class: 'jp-xcsh-CallHeadline' },
      toggleButton(ctx, callId, '', {
        byDefault,
        className: 'jp-xcsh-Toggle',
        title: open ? ctx.trans.__('Collapse') : ctx.trans.__('Expand')
      }),
      h('span', {
        class: 'jp-xcsh-StatusBadge',
        'data-status': options.status,
        title: options.statusLabel
      }),
      options.title
    ),
    h(
      'div',
      { class: 'jp-xcsh-CallMeta' },
      ...options.details,
      timeLabel(options.time)
    )
  );
  header.addEventListener('click', event => {
    const target = event.target as Element | null;
    if (target?.closest('button, a, input, select, textarea') === null) {
      ctx.toggle(callId, byDefault);
    }
  });
  return header;
}
