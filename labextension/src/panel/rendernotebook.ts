/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { TranslationBundle } from '@jupyterlab/translation';

import { UNTRANSLATED } from '../translation';
import { Collapsed } from './collapse';
import { Child, h } from '../core/dom';
import type { INotebookCallEvent, INotebookChangeEvent } from '../core/events';
import type { INotebookCall } from '../core/activity';
import {
  BlockLanguage,
  callHeader,
  IRenderContext,
  textBlock
} from './renderparts';
import { canUndo } from '../core/undoable';

/**
 * The status line of a notebook call:
 * `Notebook · <action> · <path> · cell <n> · <type>`, or for a batch
 * `Notebook · batch · <path> · <k> changes`.
 */
export function notebookStatusLine(
  call: INotebookCall,
  trans: TranslationBundle = UNTRANSLATED
): string {
  const e = call.event;
  // The person's own undo (a revert made from the lab) is never shown as an agent's call;
  // an agent's call names the agent first, where it named itself.
  const parts =
    call.undoOf !== null
      ? [trans.__('You'), trans.__('undo'), e.path]
      : [...(e.agent ? [e.agent] : []), trans.__('Notebook'), e.action, e.path];
  if (e.changes !== null && e.changes.length > 0) {
    const k = e.changes.length;
    parts.push(trans._n('%1 change', '%1 changes', k));
    return parts.join(' · ');
  }
  const where = cellPlace(e, trans);
  if (where !== null) {
    parts.push(where);
  }
  if (e.cellType) {
    parts.push(e.cellType);
  }
  return parts.join(' · ');
}

/**
 * Where a change left its cell: `cell <n>`, or `cell <from> → <to>` for a
 * move; `null` when the server did not say.
 */
function cellPlace(
  change: INotebookChangeEvent | INotebookCallEvent,
  trans: TranslationBundle
): string | null {
  if (change.cellIndex === null) {
    return null;
  }
  return change.fromIndex !== null && change.fromIndex !== change.cellIndex
    ? trans.__('cell %1 → %2', change.fromIndex, change.cellIndex)
    : trans.__('cell %1', change.cellIndex);
}

/**
 * The cell a click on the call opens the notebook at: the call's, or a
 * batch's first change's.
 */
function targetCell(e: INotebookCallEvent): number | null {
  return e.cellIndex ?? e.changes?.[0]?.cellIndex ?? null;
}

/**
 * A notebook call's line as the panel shows it: its target first, the
 * notebook's file name and the cell (or the batch's changes), then the action
 * and who made the call, which the line cuts first when it is narrow. The
 * whole status line (`notebookStatusLine`) is said on hover and to screen
 * readers.
 */
export function notebookLine(
  call: INotebookCall,
  trans: TranslationBundle = UNTRANSLATED
): { file: string; place: string; tool: string } {
  const e = call.event;
  const place =
    e.changes !== null && e.changes.length > 0
      ? trans._n('%1 change', '%1 changes', e.changes.length)
      : (cellPlace(e, trans) ?? '');
  // The person's own undo is never shown as an agent's call.
  const tool =
    call.undoOf !== null
      ? [trans.__('undo'), trans.__('You')]
      : [e.action, ...(e.agent ? [e.agent] : [])];
  return {
    file: e.path.split('/').pop() ?? '',
    place,
    tool: tool.join(' · ')
  };
}

/**
 * The title of a notebook call's line: the target (file, then place), whole
 * while it fits, the file name cut before the place when it does not; then the
 * action and the agent, cut first (see activity.css).
 */
function lineParts(line: {
  file: string;
  place: string;
  tool: string;
}): Child[] {
  const target: Child[] = [
    line.file !== ''
      ? h('span', { class: 'jp-xcsh-CallFile' }, line.file)
      : null,
    line.place !== ''
      ? h(
          'span',
          { class: 'jp-xcsh-CallPlace' },
          line.file !== '' ? ` · ${line.place}` : line.place
        )
      : null
  ];
  const hasTarget = line.file !== '' || line.place !== '';
  return [
    hasTarget ? h('span', { class: 'jp-xcsh-CallTarget' }, target) : null,
    h(
      'span',
      { class: 'jp-xcsh-CallTool' },
      hasTarget ? ` · ${line.tool}` : line.tool
    )
  ];
}

/**
 * Render a notebook call: its line (which opens the notebook at the cell),
 * then the cell source or the error.
 */
export function renderNotebookCall(
  call: INotebookCall,
  ctx: IRenderContext
): HTMLElement {
  const e = call.event;
  const trans = ctx.trans;
  const open = ctx.isOpen(call.id, false);
  const statusLine = notebookStatusLine(call, trans);

  const canOpen = e.status === 'ok' && e.path !== '';
  const target = targetCell(e);
  const parts = lineParts(notebookLine(call, trans));
  const title = canOpen
    ? h(
        'button',
        {
          type: 'button',
          class: 'jp-xcsh-CallTitle jp-xcsh-NotebookTitle jp-xcsh-OpenNotebook',
          title: `${statusLine}\n${
            target === null
              ? trans.__('Open %1', e.path)
              : trans.__('Open %1 at cell %2', e.path, target)
          }`,
          'data-xcsh-key': `${call.id}/open`
        },
        ...parts
      )
    : h(
        'span',
        {
          class: 'jp-xcsh-CallTitle jp-xcsh-NotebookTitle',
          title: statusLine
        },
        ...parts
      );
  if (canOpen) {
    title.addEventListener('click', () => ctx.openNotebook(e.path, target));
  }

  const header = callHeader(ctx, call.id, {
    status: e.status,
    statusLabel: e.status === 'ok' ? trans.__('Succeeded') : trans.__('Failed'),
    title,
    details: [
      // A sign, named on hover: the title already says "You · undo", the line keeps its width.
      call.undoOf !== null
        ? h(
            'span',
            {
              class: 'jp-xcsh-UndoOf',
              role: 'img',
              'aria-label': trans.__('Your undo of an agent call'),
              title: trans.__('Your undo of an agent call')
            },
            '\u21B6'
          )
        : null,
      reviewControl(call, ctx)
    ],
    time: call.time
  });

  const body = h(
    'div',
    { class: 'jp-xcsh-CallBody', hidden: !open },
    undoOutcome(call)
  );
  if (e.status === 'error') {
    body.appendChild(
      textBlock(
        ctx,
        `${call.id}/error`,
        e.error ?? trans.__('The call failed.'),
        {
          lines: Collapsed.ERROR_LINES,
          keep: 'head',
          className: 'jp-xcsh-Error',
          label: trans.__('Error')
        }
      )
    );
  } else if (e.changes !== null) {
    e.changes.forEach((change, k) =>
      body.appendChild(renderChange(call, change, k, ctx))
    );
  } else if (e.source !== null) {
    if (e.action === 'delete') {
      body.appendChild(
        h('div', { class: 'jp-xcsh-Note' }, trans.__('Removed source'))
      );
    }
    body.appendChild(
      textBlock(ctx, `${call.id}/source`, e.source, {
        lines: Collapsed.NOTEBOOK_SOURCE_LINES,
        keep: 'head',
        language: languageOf(e.cellType),
        className: 'jp-xcsh-Source',
        label: trans.__('Cell source')
      })
    );
  }

  return h(
    'article',
    {
      class: 'jp-xcsh-Call',
      'data-kind': 'notebook',
      'data-call-id': call.id,
      'data-status': e.status,
      'aria-label': statusLine
    },
    header,
    body
  );
}

/**
 * One change of a batch: `<k>. <action> · cell <n> · <type>` and its source
 * (collapsed), as a single change's call shows it.
 */
function renderChange(
  call: INotebookCall,
  change: INotebookChangeEvent,
  k: number,
  ctx: IRenderContext
): HTMLElement {
  const trans = ctx.trans;
  const parts = [`${k + 1}. ${change.action}`];
  const where = cellPlace(change, trans);
  if (where !== null) {
    parts.push(where);
  }
  if (change.cellType) {
    parts.push(change.cellType);
  }
  const line = parts.join(' · ');
  const element = h(
    'section',
    { class: 'jp-xcsh-BatchChange', 'aria-label': line },
    h('div', { class: 'jp-xcsh-BatchChangeTitle' }, line)
  );
  if (change.source !== null) {
    element.appendChild(
      textBlock(ctx, `${call.id}/change-${k}/source`, change.source, {
        lines: Collapsed.BATCH_SOURCE_LINES,
        keep: 'head',
        language: languageOf(change.cellType),
        className: 'jp-xcsh-Source',
        label:
          change.action === 'delete'
            ? trans.__('Removed source')
            : trans.__('Cell source')
      })
    );
  }
  return element;
}

/**
 * Where the change stands in the review (the same state as the cell's header in the notebook):
 * Keep and Undo while it waits, or what became of it. Undo here is the review's undo.
 */
function reviewControl(call: INotebookCall, ctx: IRenderContext): Child {
  if (!canUndo(call.event) || call.undoOf !== null) {
    return null;
  }
  const state = call.undo.state;
  if (state === 'done' || state === 'kept') {
    return h(
      'span',
      { class: 'jp-xcsh-Undone', 'data-state': state },
      state === 'done' ? ctx.trans.__('Undone') : ctx.trans.__('Kept')
    );
  }
  const pending = state === 'pending';
  // Small icon buttons with their names for screen readers and on hover: the line keeps its
  // width for the title.
  const button = (
    name: string,
    icon: string,
    label: string,
    title: string,
    act: () => void
  ) => {
    const element = h(
      'button',
      {
        type: 'button',
        class: `jp-xcsh-ReviewAction jp-xcsh-${name}`,
        disabled: pending,
        'data-xcsh-key': `${call.id}/${name.toLowerCase()}`,
        'aria-label': label,
        title: `${label}: ${title}`
      },
      icon
    );
    element.addEventListener('click', event => {
      event.stopPropagation();
      act();
    });
    return element;
  };
  return h(
    'span',
    { class: 'jp-xcsh-ReviewActions' },
    button(
      'Keep',
      '\u2713',
      ctx.trans.__('Keep'),
      ctx.trans.__("Keep this call's changes"),
      () => ctx.keep(call)
    ),
    button(
      'Undo',
      '\u21B6',
      pending ? ctx.trans.__('Undoing…') : ctx.trans.__('Undo'),
      ctx.trans.__('Put the notebook back as it was before this call'),
      () => ctx.undo(call)
    )
  );
}

/**
 * Why an undo was refused or failed, shown above the cell source.
 */
function undoOutcome(call: INotebookCall): Child {
  const undo = call.undo;
  if (undo.state !== 'refused' && undo.state !== 'failed') {
    return null;
  }
  return h(
    'div',
    {
      class: 'jp-xcsh-UndoRefused',
      role: 'alert',
      'data-state': undo.state
    },
    h('div', { class: 'jp-xcsh-UndoMessage' }, undo.message),
    undo.state === 'refused' && undo.detail !== null
      ? h('div', { class: 'jp-xcsh-Note' }, undo.detail)
      : null
  );
}

function languageOf(cellType: string | null): BlockLanguage {
  if (cellType === 'markdown') {
    return 'markdown';
  }
  if (cellType === 'code') {
    return 'python';
  }
  return null;
}
