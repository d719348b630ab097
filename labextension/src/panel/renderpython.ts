/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { TranslationBundle } from '@jupyterlab/translation';

import { Collapsed, Expanded, lastItems } from './collapse';
import { formatBytes, formatDuration } from '../core/format';
import { compactJson, h } from '../core/dom';
import type { PythonDisplay } from '../core/events';
import type {
  IPythonCall,
  IPythonCellState,
  PythonCallStatus
} from '../core/activity';
import { renderImage } from './renderimage';
import { renderInputPrompt } from './renderinput';
import { renderJsonTree } from './renderjson';
import {
  callHeader,
  IRenderContext,
  textBlock,
  toggleButton
} from './renderparts';

/**
 * Words for the state of a call.
 */
function callStatusLabel(
  status: PythonCallStatus,
  trans: TranslationBundle
): string {
  switch (status) {
    case 'running':
      return trans.__('running');
    case 'ok':
      return trans.__('complete');
    case 'error':
      return trans.__('error');
    case 'cancelled':
      return trans.__('cancelled');
    case 'timedOut':
      return trans.__('timed out');
  }
}

/**
 * Render a python call: a header (with an interrupt button while it runs),
 * each cell with its status, code, output tail, status events and displays,
 * then the truncation warning and the error of the result.
 */
export function renderPythonCall(
  call: IPythonCall,
  ctx: IRenderContext
): HTMLElement {
  const trans = ctx.trans;
  // A call at work shows its output as it comes; a finished one is one line.
  const openByDefault =
    call.status === 'running' || call.input?.state === 'waiting';
  const open = ctx.isOpen(call.id, openByDefault);
  const n = call.cells.length;
  // Without the started event the number of cells is unknown.
  const total = call.started ? String(n) : '?';
  const statusLabel = callStatusLabel(call.status, trans);
  const summary = [
    call.agent,
    call.path !== null ? trans.__('Run') : trans.__('Python'),
    call.path ?? call.session,
    n > 0 ? trans._n('%1 cell', '%1 cells', n) : null
  ]
    .filter(part => part !== null)
    .join(' · ');

  const duration = call.result?.durationMs ?? null;
  const header = callHeader(ctx, call.id, {
    status: call.status,
    statusLabel,
    title: h('span', { class: 'jp-xcsh-CallTitle' }, summary),
    details: [
      h(
        'span',
        { class: 'jp-xcsh-CallStatus', 'data-status': call.status },
        statusLabel
      ),
      duration !== null
        ? h('span', { class: 'jp-xcsh-Duration' }, formatDuration(duration))
        : null,
      interruptButton(call, ctx)
    ],
    time: call.time,
    open: openByDefault
  });

  const body = h('div', { class: 'jp-xcsh-CallBody', hidden: !open });
  for (const cell of call.cells) {
    body.appendChild(renderCell(call, cell, total, ctx));
  }
  const prompt = renderInputPrompt(call, ctx);
  if (prompt !== null) {
    body.appendChild(prompt);
  }
  if (call.displays.length > 0) {
    body.appendChild(renderDisplays(call, 'call', call.displays, ctx));
  }
  const result = call.result;
  if (result?.truncated) {
    body.appendChild(truncationWarning(call, ctx));
  }
  if (result !== null && call.status !== 'ok' && result.text !== '') {
    body.appendChild(
      textBlock(ctx, `${call.id}/result`, result.text, {
        lines: Collapsed.RESULT_LINES,
        keep: 'tail',
        className: 'jp-xcsh-Error',
        label: trans.__('Result')
      })
    );
  }
  if (call.interruptError !== null) {
    body.appendChild(
      h(
        'div',
        { class: 'jp-xcsh-Error jp-xcsh-Note' },
        trans.__('Could not interrupt: %1', call.interruptError)
      )
    );
  }

  return h(
    'article',
    {
      class: 'jp-xcsh-Call',
      'data-kind': 'python',
      'data-call-id': call.id,
      'data-status': call.status,
      'aria-label': `${summary}, ${statusLabel}`
    },
    header,
    body
  );
}

/**
 * The interrupt button of a running call whose session is known.
 */
function interruptButton(
  call: IPythonCall,
  ctx: IRenderContext
): HTMLButtonElement | null {
  if (
    call.status !== 'running' ||
    (call.session === null && call.path === null)
  ) {
    return null;
  }
  const button = h(
    'button',
    {
      type: 'button',
      class: 'jp-xcsh-Interrupt',
      disabled: call.interrupting,
      title:
        call.path !== null
          ? ctx.trans.__('Interrupt the run in %1', call.path)
          : ctx.trans.__(
              'Interrupt the call running in session %1',
              call.session ?? ''
            ),
      'data-xcsh-key': `${call.id}/interrupt`
    },
    call.interrupting
      ? ctx.trans.__('Interrupting…')
      : ctx.trans.__('Interrupt')
  );
  button.addEventListener('click', event => {
    event.stopPropagation();
    ctx.interrupt(call);
  });
  return button;
}

function renderCell(
  call: IPythonCall,
  cell: IPythonCellState,
  total: string,
  ctx: IRenderContext
): HTMLElement {
  const trans = ctx.trans;
  const key = `${call.id}/cell/${cell.index}`;
  const title = cell.title !== '' ? cell.title : firstLine(cell.code);
  const header = h(
    'div',
    { class: 'jp-xcsh-CellHeader' },
    h(
      'span',
      { class: 'jp-xcsh-CellStatus', 'data-status': cell.status },
      cell.status
    ),
    h(
      'span',
      { class: 'jp-xcsh-CellTitle' },
      `[${cell.index + 1}/${total}] `,
      title
    ),
    cell.durationMs !== null
      ? h(
          'span',
          { class: 'jp-xcsh-Duration' },
          formatDuration(cell.durationMs)
        )
      : null
  );
  const element = h(
    'div',
    {
      class: 'jp-xcsh-Cell',
      'data-index': cell.index,
      'data-status': cell.status
    },
    header
  );
  if (cell.code !== '') {
    element.appendChild(
      textBlock(ctx, `${key}/code`, cell.code, {
        lines: Collapsed.PYTHON_CODE_LINES,
        keep: 'head',
        language: 'python',
        className: 'jp-xcsh-Source',
        label: trans.__('Code')
      })
    );
  }
  if (cell.output !== '') {
    element.appendChild(
      textBlock(ctx, `${key}/output`, cell.output, {
        lines: Collapsed.OUTPUT_LINES,
        keep: 'tail',
        className: 'jp-xcsh-Output',
        label: trans.__('Output')
      })
    );
  }
  if (cell.statusEventCount > 0) {
    element.appendChild(renderStatusEvents(key, cell, ctx));
  }
  if (cell.displays.length > 0) {
    element.appendChild(renderDisplays(call, key, cell.displays, ctx));
  }
  return element;
}

function renderStatusEvents(
  key: string,
  cell: IPythonCellState,
  ctx: IRenderContext
): HTMLElement {
  const trans = ctx.trans;
  const eventsKey = `${key}/status`;
  const collapsible = cell.statusEventCount > Collapsed.STATUS_EVENTS;
  const open = collapsible && ctx.isOpen(eventsKey, false);
  const shown = lastItems(
    cell.statusEvents,
    open ? cell.statusEvents.length : Collapsed.STATUS_EVENTS
  );
  const earlier = cell.statusEventCount - shown.items.length;
  const list = h(
    'ul',
    { class: 'jp-xcsh-StatusEvents', 'aria-label': trans.__('Status events') },
    shown.items.map(statusEventItem)
  );
  let button: HTMLElement | null = null;
  if (collapsible) {
    const label = open
      ? trans.__('Show fewer events')
      : trans._n('Show %1 earlier event', 'Show %1 earlier events', earlier);
    button = toggleButton(ctx, eventsKey, label);
  }
  const dropped =
    open && earlier > 0
      ? h(
          'div',
          { class: 'jp-xcsh-Note' },
          trans._n(
            '%1 earlier event not kept',
            '%1 earlier events not kept',
            earlier
          )
        )
      : null;
  return h('div', { class: 'jp-xcsh-StatusBlock' }, button, dropped, list);
}

/**
 * A status event as `op` and its other data, on one line: its `message` when it has one (the
 * server's own events, such as a wait for the person's approval, say what they mean in it).
 */
function statusEventItem(data: unknown): HTMLElement {
  if (typeof data === 'object' && data !== null && !Array.isArray(data)) {
    const { op, ...rest } = data as Record<string, unknown>;
    const restText =
      typeof rest.message === 'string'
        ? rest.message
        : Object.keys(rest).length > 0
          ? compactJson(rest, 300)
          : '';
    return h(
      'li',
      {},
      h(
        'span',
        { class: 'jp-xcsh-StatusOp' },
        typeof op === 'string' ? op : compactJson(op ?? 'status', 60)
      ),
      restText !== '' ? ` ${restText}` : null
    );
  }
  return h('li', {}, compactJson(data, 300));
}

function renderDisplays(
  call: IPythonCall,
  key: string,
  displays: readonly PythonDisplay[],
  ctx: IRenderContext
): HTMLElement {
  return h(
    'div',
    { class: 'jp-xcsh-Displays' },
    displays.map((display, i) =>
      display.kind === 'image'
        ? renderImage(display, ctx)
        : renderJsonDisplay(`${key}/display/${i}`, display.data, ctx)
    )
  );
}

function renderJsonDisplay(
  key: string,
  data: unknown,
  ctx: IRenderContext
): HTMLElement {
  const open = ctx.isOpen(key, false);
  const tree = renderJsonTree(
    data,
    open
      ? {
          depth: Expanded.JSON_DEPTH,
          items: Expanded.JSON_ITEMS,
          stringChars: 10000
        }
      : {
          depth: Collapsed.JSON_DEPTH,
          items: Collapsed.JSON_ITEMS,
          stringChars: 200
        }
  );
  const button =
    open || tree.clipped
      ? toggleButton(
          ctx,
          key,
          open ? ctx.trans.__('Collapse JSON') : ctx.trans.__('Expand JSON')
        )
      : null;
  return h('div', { class: 'jp-xcsh-JsonBlock' }, tree.node, button);
}

function truncationWarning(
  call: IPythonCall,
  ctx: IRenderContext
): HTMLElement {
  const trans = ctx.trans;
  const result = call.result!;
  const sizes = [
    result.totalLines !== null
      ? trans._n('%1 line', '%1 lines', result.totalLines)
      : null,
    result.totalBytes !== null ? formatBytes(result.totalBytes) : null
  ].filter(part => part !== null);
  const warning =
    sizes.length > 0
      ? trans.__(
          'Output truncated: only its tail is shown. The full output (%1) is kept as an artifact.',
          sizes.join(', ')
        )
      : trans.__(
          'Output truncated: only its tail is shown. It is kept as an artifact.'
        );
  let link: HTMLElement;
  if (result.artifactPath !== null) {
    const path = result.artifactPath;
    link = h(
      'button',
      {
        type: 'button',
        class: 'jp-xcsh-Link jp-xcsh-OpenArtifact',
        title: trans.__('Open %1', path),
        'data-xcsh-key': `${call.id}/artifact`
      },
      trans.__('Open full output')
    );
    link.addEventListener('click', event => {
      event.stopPropagation();
      ctx.openArtifact(path);
    });
  } else {
    link = h(
      'code',
      {},
      result.artifactId !== null ? `artifact://${result.artifactId}` : ''
    );
  }
  return h(
    'div',
    { class: 'jp-xcsh-Warning', role: 'note' },
    `${warning} `,
    link
  );
}

function firstLine(code: string): string {
  const line = code.split('\n').find(l => l.trim() !== '') ?? '';
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}
