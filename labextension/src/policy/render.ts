/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The DOM of approvals: a request as the approval dialog shows it (who, what, where, what
 * would change), and the approvals log's lines in the activity panel. All server text goes in
 * as text, never as HTML.
 */

import type { TranslationBundle } from '@jupyterlab/translation';

import { formatDuration } from '../core/format';
import { h } from '../core/dom';
import { renderUnified } from '../review/render';
import type { IApprovalLogEntry, IPendingApproval } from './approvals';
import { classLabel } from './presets';
import type { IApproval } from './types';
import { parseUnifiedDiff } from './unified';

/**
 * The most characters of code a request shows.
 */
const MAX_CODE_CHARS = 64 * 1024;

/**
 * What a request is about: the agent, the action, the notebook, and what would change.
 */
export function renderApproval(
  approval: IApproval,
  trans: TranslationBundle
): HTMLElement {
  const agent = approval.agent || trans.__('An agent');
  const rows: [string, string][] = [
    [trans.__('Agent'), agent],
    [
      trans.__('Action'),
      approval.summary ||
        trans.__('%1 (%2)', approval.tool, classLabel(approval.class, trans))
    ],
    [trans.__('Notebook'), approval.path]
  ];
  if (approval.detail.file && approval.detail.file !== approval.path) {
    rows.push([trans.__('File'), approval.detail.file]);
  }
  const table = h(
    'dl',
    { class: 'jp-xcsh-Approval-facts' },
    rows.flatMap(([term, value]) => [
      h('dt', {}, term),
      h('dd', { 'data-fact': term }, value)
    ])
  );
  const parts: HTMLElement[] = [
    h(
      'p',
      { class: 'jp-xcsh-Approval-lead' },
      trans.__('%1 asks for your approval, and waits for it.', agent)
    ),
    table
  ];
  const { diff, code } = approval.detail;
  if (diff) {
    parts.push(
      h(
        'h3',
        { class: 'jp-xcsh-Approval-heading' },
        trans.__('What would change')
      ),
      renderUnified(parseUnifiedDiff(diff))
    );
  }
  if (code) {
    parts.push(
      h(
        'h3',
        { class: 'jp-xcsh-Approval-heading' },
        trans.__('The code that would run')
      ),
      h(
        'pre',
        { class: 'jp-xcsh-Approval-code' },
        code.length > MAX_CODE_CHARS
          ? `${code.slice(0, MAX_CODE_CHARS)}\n…`
          : code
      )
    );
  }
  return h(
    'div',
    {
      class: 'jp-xcsh-Approval',
      'data-approval-id': approval.id,
      'data-class': approval.class
    },
    parts
  );
}

/**
 * How long until a request expires, e.g. "Expires in 1 min 40 s" (`null` without a time).
 *
 * @param deadline - When it expires, by this page's clock (ms since the epoch).
 * @param now - The time now, by the same clock.
 */
export function expiresLine(
  deadline: number | null,
  now: number,
  trans: TranslationBundle
): string | null {
  if (deadline === null) {
    return null;
  }
  const seconds = Math.ceil(Math.max(0, deadline - now) / 1000);
  if (seconds === 0) {
    return trans.__('Expired');
  }
  // Whole seconds: the countdown ticks once a second.
  return seconds < 60
    ? trans.__('Expires in %1 s', seconds)
    : trans.__('Expires in %1', formatDuration(seconds * 1000));
}

/**
 * One line of the approvals log, e.g. "Allowed once: run cell 3 of a.ipynb (claude)".
 */
export function logLine(
  entry: IApprovalLogEntry,
  trans: TranslationBundle
): string {
  const what =
    entry.approval.summary ||
    trans.__('%1 on %2', entry.approval.tool, entry.approval.path);
  const agent = entry.approval.agent || trans.__('an agent');
  switch (entry.kind) {
    case 'asked':
      return trans.__('%1 asked: %2', agent, what);
    case 'answered':
      switch (entry.decision) {
        case 'allow-once':
          return trans.__('Allowed once: %1', what);
        case 'allow-notebook':
          return trans.__('Allowed for this notebook: %1', what);
        case 'deny':
          return entry.reason
            ? trans.__('Denied: %1 (%2)', what, entry.reason)
            : trans.__('Denied: %1', what);
        default:
          return trans.__('Answered: %1', what);
      }
    case 'expired':
      return trans.__('Not answered in time: %1', what);
    case 'refused':
      switch (entry.reason) {
        case 'policy_denied':
          return trans.__('Refused by a policy: %1', what);
        case 'approval_required':
          return trans.__('Refused, no lab could answer in time: %1', what);
        default:
          return entry.reason
            ? trans.__('Refused: %1 (%2)', what, entry.reason)
            : trans.__('Refused: %1', what);
      }
  }
}

/**
 * The approvals section of the activity panel: the requests waiting (each with a button
 * that opens it) and the log, newest first.
 */
export function renderApprovalSection(
  pending: readonly IPendingApproval[],
  log: readonly IApprovalLogEntry[],
  trans: TranslationBundle,
  open: (id: string) => void
): HTMLElement {
  const items = pending.map(({ approval, error }) => {
    const button = h(
      'button',
      { class: 'jp-mod-styled jp-mod-accept', type: 'button' },
      trans.__('Answer…')
    );
    button.addEventListener('click', () => open(approval.id));
    return h(
      'li',
      { class: 'jp-xcsh-ApprovalLog-pending', 'data-approval-id': approval.id },
      h(
        'span',
        { class: 'jp-xcsh-ApprovalLog-text' },
        trans.__(
          '%1 waits for your approval: %2',
          approval.agent || trans.__('An agent'),
          approval.summary || approval.path
        )
      ),
      button,
      error !== null && h('span', { class: 'jp-xcsh-Error' }, error)
    );
  });
  const lines = log.map(entry =>
    h(
      'li',
      {
        class: 'jp-xcsh-ApprovalLog-line',
        'data-kind': entry.kind,
        'data-approval-id': entry.approval.id
      },
      h(
        'time',
        { class: 'jp-xcsh-ApprovalLog-time' },
        new Date(entry.time).toLocaleTimeString()
      ),
      ' ',
      h('span', { class: 'jp-xcsh-ApprovalLog-text' }, logLine(entry, trans))
    )
  );
  return h(
    'section',
    {
      class: 'jp-xcsh-ApprovalLog',
      'aria-label': trans.__('Agent approvals')
    },
    items.length > 0 && h('ul', { class: 'jp-xcsh-ApprovalLog-list' }, items),
    lines.length > 0 &&
      h(
        'details',
        { class: 'jp-xcsh-ApprovalLog-history', open: items.length === 0 },
        h(
          'summary',
          {},
          trans._n('%1 approval event', '%1 approval events', lines.length)
        ),
        h('ul', { class: 'jp-xcsh-ApprovalLog-list' }, lines)
      )
  );
}
