/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The DOM of a change under review: its header (what the agent did, the output summary, the
 * buttons) and its source diff, unified or side by side.
 */

import type { TranslationBundle } from '@jupyterlab/translation';

import {
  diffLines,
  diffStats,
  type IDiffLine,
  type IOutputSummary,
  sideBySide
} from './diff';
import type { IReviewChange } from './model';

/**
 * What the person can do from a change's header.
 */
export interface IReviewButtons {
  keep(): void;
  undo(): void;
  /** Keep / undo every change of the call (offered when it has several). */
  keepCall?: () => void;
  undoCall?: () => void;
  /** Show or hide the diff. */
  toggleDiff(): void;
  /** Switch between unified and side-by-side. */
  toggleLayout(): void;
}

/**
 * How a change is shown.
 */
export interface IReviewView {
  /** Whether the diff is open. */
  expanded: boolean;
  /** Side by side rather than unified. */
  sideBySide: boolean;
  /** A refusal or failure to show, or `null`. */
  message: string | null;
  /** The cell's source differs from what the agent left (the person typed since). */
  changedSince: boolean;
  /** How the outputs changed, when known. */
  outputs: IOutputSummary | null;
  /** How many changes the call made. */
  callChanges: number;
}

/**
 * What a change's header says the agent did.
 */
export function changeLabel(
  change: IReviewChange,
  trans: TranslationBundle
): string {
  const moved =
    change.fromIndex !== null
      ? trans.__('moved from position %1', change.fromIndex + 1)
      : null;
  switch (change.action) {
    case 'insert':
      return trans.__('New cell (inserted by an agent)');
    case 'delete':
      return trans.__(
        'Deleted by an agent (was at position %1)',
        change.cellIndex + 1
      );
    case 'move':
      return trans.__('Agent %1', moved ?? trans.__('moved this cell'));
    default:
      return moved === null
        ? trans.__('Edited by an agent')
        : trans.__('Edited by an agent, %1', moved);
  }
}

/**
 * What a summary of output changes says, or `null` when nothing changed.
 */
export function outputLabel(
  summary: IOutputSummary | null,
  trans: TranslationBundle
): string | null {
  if (
    summary === null ||
    summary.added + summary.removed + summary.changed === 0
  ) {
    return null;
  }
  return trans.__(
    'Outputs: %1 added, %2 removed, %3 changed',
    summary.added,
    summary.removed,
    summary.changed
  );
}

function button(
  label: string,
  className: string,
  onClick: () => void,
  title?: string
): HTMLButtonElement {
  const node = document.createElement('button');
  node.type = 'button';
  node.className = `jp-xcsh-Review-button ${className}`;
  node.textContent = label;
  if (title) {
    node.title = title;
  }
  node.addEventListener('click', event => {
    event.stopPropagation();
    onClick();
  });
  // Clicking must not select the cell or start a drag.
  node.addEventListener('mousedown', event => event.stopPropagation());
  return node;
}

function span(className: string, text: string): HTMLSpanElement {
  const node = document.createElement('span');
  node.className = className;
  node.textContent = text;
  return node;
}

/**
 * Fill `node` with a change's header and diff.
 */
export function renderChange(
  node: HTMLElement,
  change: IReviewChange,
  view: IReviewView,
  buttons: IReviewButtons,
  trans: TranslationBundle
): void {
  node.replaceChildren();
  node.dataset.action = change.action;
  node.dataset.callId = change.callId;
  const lines =
    change.before !== null
      ? diffLines(change.before, change.after ?? '')
      : null;
  const header = document.createElement('div');
  header.className = 'jp-xcsh-Review-header';
  header.append(span('jp-xcsh-Review-label', changeLabel(change, trans)));
  if (lines !== null) {
    const stats = diffStats(lines);
    if (stats.added + stats.removed > 0) {
      header.append(
        span('jp-xcsh-Review-stat jp-mod-added', `+${stats.added}`),
        span('jp-xcsh-Review-stat jp-mod-removed', `\u2212${stats.removed}`)
      );
    }
  }
  const outputs = outputLabel(view.outputs, trans);
  if (outputs !== null) {
    header.append(span('jp-xcsh-Review-outputs', outputs));
  }
  if (view.changedSince) {
    header.append(
      span('jp-xcsh-Review-since', trans.__('changed since by you'))
    );
  }
  const spacer = span('jp-xcsh-Review-spacer', '');
  header.append(spacer);
  if (lines !== null && change.action !== 'move') {
    const toggle = button(
      view.expanded ? trans.__('Hide diff') : trans.__('Show diff'),
      'jp-xcsh-Review-toggle',
      buttons.toggleDiff
    );
    toggle.setAttribute('aria-expanded', String(view.expanded));
    header.append(toggle);
    if (view.expanded) {
      header.append(
        button(
          view.sideBySide ? trans.__('Unified') : trans.__('Side by side'),
          'jp-xcsh-Review-layout',
          buttons.toggleLayout
        )
      );
    }
  }
  header.append(
    button(
      trans.__('Keep'),
      'jp-xcsh-Review-keep',
      buttons.keep,
      trans.__('Keep this change (Accel Alt Y)')
    ),
    button(
      trans.__('Undo'),
      'jp-xcsh-Review-undo',
      buttons.undo,
      trans.__('Undo this change (Accel Alt N)')
    )
  );
  if (view.callChanges > 1 && buttons.keepCall && buttons.undoCall) {
    header.append(
      button(
        trans.__('Keep call (%1)', view.callChanges),
        'jp-xcsh-Review-keepCall',
        buttons.keepCall,
        trans.__('Keep every change of this agent call')
      ),
      button(
        trans.__('Undo call (%1)', view.callChanges),
        'jp-xcsh-Review-undoCall',
        buttons.undoCall,
        trans.__('Undo every change of this agent call')
      )
    );
  }
  node.append(header);
  if (view.message !== null) {
    const message = span('jp-xcsh-Review-message', view.message);
    message.setAttribute('role', 'alert');
    node.append(message);
  }
  if (lines === null && change.action === 'edit') {
    node.append(
      span(
        'jp-xcsh-Review-note',
        trans.__('The cell before this change is too large to show here.')
      )
    );
  }
  if (lines !== null && view.expanded && change.action !== 'move') {
    node.append(
      view.sideBySide ? renderSideBySide(lines) : renderUnified(lines)
    );
  }
}

function lineNumber(value: number | null): HTMLSpanElement {
  return span('jp-xcsh-Diff-number', value === null ? '' : String(value));
}

const SIGNS = { same: ' ', add: '+', remove: '\u2212' } as const;
const CLASSES = {
  same: 'jp-mod-same',
  add: 'jp-mod-added',
  remove: 'jp-mod-removed'
} as const;

/**
 * A unified diff: one row per line, removed and added lines coloured.
 */
export function renderUnified(lines: readonly IDiffLine[]): HTMLElement {
  const table = document.createElement('div');
  table.className = 'jp-xcsh-Diff jp-mod-unified';
  for (const line of lines) {
    const row = document.createElement('div');
    row.className = `jp-xcsh-Diff-line ${CLASSES[line.op]}`;
    row.append(
      lineNumber(line.oldLine),
      lineNumber(line.newLine),
      span('jp-xcsh-Diff-sign', SIGNS[line.op]),
      span('jp-xcsh-Diff-text', line.text)
    );
    table.append(row);
  }
  return table;
}

/**
 * A side-by-side diff: before on the left, after on the right.
 */
export function renderSideBySide(lines: readonly IDiffLine[]): HTMLElement {
  const table = document.createElement('div');
  table.className = 'jp-xcsh-Diff jp-mod-sideBySide';
  for (const { left, right } of sideBySide(lines)) {
    const row = document.createElement('div');
    row.className = 'jp-xcsh-Diff-row';
    for (const [line, number] of [
      [left, left?.oldLine ?? null],
      [right, right?.newLine ?? null]
    ] as const) {
      const cell = document.createElement('div');
      cell.className = `jp-xcsh-Diff-side ${line === null ? 'jp-mod-empty' : CLASSES[line.op]}`;
      cell.append(
        lineNumber(number),
        span('jp-xcsh-Diff-text', line?.text ?? '')
      );
      row.append(cell);
    }
    table.append(row);
  }
  return table;
}
