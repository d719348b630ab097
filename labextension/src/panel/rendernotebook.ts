/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { Collapsed } from './collapse';
import { Child, h } from './dom';
import type { INotebookCall } from './model';
import {
  BlockLanguage,
  callHeader,
  IRenderContext,
  textBlock
} from './renderparts';
import { canRevert } from './revert';

/**
 * The status line of a notebook call:
 * `Notebook · <action> · <path> · cell <n> · <type>`.
 */
export function notebookStatusLine(call: INotebookCall): string {
  const e = call.event;
  const parts = ['Notebook', e.action, e.path];
  if (e.cellIndex !== null) {
    parts.push(
      e.fromIndex !== null && e.fromIndex !== e.cellIndex
        ? `cell ${e.fromIndex} → ${e.cellIndex}`
        : `cell ${e.cellIndex}`
    );
  }
  if (e.cellType) {
    parts.push(e.cellType);
  }
  return parts.join(' · ');
}

/**
 * Render a notebook call: its status line (which opens the notebook at the
 * cell), then the cell source or the error.
 */
export function renderNotebookCall(
  call: INotebookCall,
  ctx: IRenderContext
): HTMLElement {
  const e = call.event;
  const open = ctx.isOpen(call.id, true);
  const statusLine = notebookStatusLine(call);

  const canOpen = e.status === 'ok' && e.path !== '';
  const title = canOpen
    ? h(
        'button',
        {
          type: 'button',
          class: 'jp-xcsh-CallTitle jp-xcsh-OpenNotebook',
          title:
            e.cellIndex === null
              ? `Open ${e.path}`
              : `Open ${e.path} at cell ${e.cellIndex}`,
          'data-xcsh-key': `${call.id}/open`
        },
        statusLine
      )
    : h('span', { class: 'jp-xcsh-CallTitle' }, statusLine);
  if (canOpen) {
    title.addEventListener('click', () =>
      ctx.openNotebook(e.path, e.cellIndex)
    );
  }

  const header = callHeader(ctx, call.id, {
    status: e.status,
    statusLabel: e.status === 'ok' ? 'Succeeded' : 'Failed',
    title,
    details: [
      call.revertOf !== null
        ? h('span', { class: 'jp-xcsh-RevertOf' }, 'Revert from the panel')
        : null,
      revertControl(call, ctx)
    ],
    time: call.time
  });

  const body = h(
    'div',
    { class: 'jp-xcsh-CallBody', hidden: !open },
    revertOutcome(call)
  );
  if (e.status === 'error') {
    body.appendChild(
      textBlock(ctx, `${call.id}/error`, e.error ?? 'The call failed.', {
        lines: Collapsed.ERROR_LINES,
        keep: 'head',
        className: 'jp-xcsh-Error',
        label: 'Error'
      })
    );
  } else if (e.source !== null) {
    if (e.action === 'delete') {
      body.appendChild(h('div', { class: 'jp-xcsh-Note' }, 'Removed source'));
    }
    body.appendChild(
      textBlock(ctx, `${call.id}/source`, e.source, {
        lines: Collapsed.NOTEBOOK_SOURCE_LINES,
        keep: 'head',
        language: languageOf(e.cellType),
        className: 'jp-xcsh-Source',
        label: 'Cell source'
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
 * The revert button of a change, or what became of its revert.
 */
function revertControl(call: INotebookCall, ctx: IRenderContext): Child {
  if (!canRevert(call.event)) {
    return null;
  }
  const state = call.revert.state;
  if (state === 'done') {
    return h(
      'span',
      { class: 'jp-xcsh-Reverted', 'data-state': 'done' },
      'Reverted'
    );
  }
  const pending = state === 'pending';
  const button = h(
    'button',
    {
      type: 'button',
      class: 'jp-xcsh-Revert',
      disabled: pending,
      'data-xcsh-key': `${call.id}/revert`,
      title: 'Put the notebook back as it was before this call'
    },
    pending ? 'Reverting…' : 'Revert'
  );
  button.addEventListener('click', event => {
    event.stopPropagation();
    ctx.revert(call);
  });
  return button;
}

/**
 * Why a revert was refused or failed, shown above the cell source.
 */
function revertOutcome(call: INotebookCall): Child {
  const revert = call.revert;
  if (revert.state !== 'refused' && revert.state !== 'failed') {
    return null;
  }
  return h(
    'div',
    {
      class: 'jp-xcsh-RevertRefused',
      role: 'alert',
      'data-state': revert.state
    },
    h('div', { class: 'jp-xcsh-RevertMessage' }, revert.message),
    revert.state === 'refused' && revert.detail !== null
      ? h('div', { class: 'jp-xcsh-Note' }, revert.detail)
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
