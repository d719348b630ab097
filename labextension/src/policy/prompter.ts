/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The approval dialog: an agent's request shown at once, one at a time, oldest first, with
 * Allow once / Allow for this notebook / Deny (and an optional reason). It closes by itself
 * when another lab answers or the request expires; a late answer says "already answered".
 */

import { Dialog, Notification } from '@jupyterlab/apputils';
import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { h } from '../core/dom';
import type { ApprovalChange, ApprovalQueue } from './approvals';
import { expiresLine, renderApproval } from './render';
import type { ApprovalDecision, IApproval } from './types';

/**
 * The most characters of a deny's reason (the server takes 500).
 */
export const MAX_REASON_CHARS = 500;

/**
 * The dialog's body: the request, a countdown, and the reason field.
 */
export class ApprovalBody extends Widget implements Dialog.IBodyWidget<string> {
  /**
   * Render `approval`; the countdown counts to `deadline` with `now` (this page's clock).
   */
  constructor(
    readonly approval: IApproval,
    private readonly deadline: number | null,
    private readonly trans: TranslationBundle,
    private readonly now: () => number = Date.now
  ) {
    super();
    this.addClass('jp-xcsh-ApprovalBody');
    this._expires = h('p', {
      class: 'jp-xcsh-Approval-expires',
      'aria-live': 'off'
    });
    this._reason = h('textarea', {
      class: 'jp-mod-styled jp-xcsh-Approval-reason',
      rows: 2,
      maxlength: MAX_REASON_CHARS,
      placeholder: trans.__('Reason for a deny (optional, sent to the agent)'),
      'aria-label': trans.__('Reason for a deny')
    });
    this.node.append(
      renderApproval(approval, trans),
      this._expires,
      this._reason
    );
    this.tick();
  }

  /**
   * The reason the person typed.
   */
  getValue(): string {
    return this._reason.value.trim().slice(0, MAX_REASON_CHARS);
  }

  /**
   * Update the countdown.
   */
  tick(): void {
    this._expires.textContent =
      expiresLine(this.deadline, this.now(), this.trans) ?? '';
  }

  private _expires: HTMLElement;
  private _reason: HTMLTextAreaElement;
}

/**
 * What the dialog's buttons answer, by the action each carries.
 */
const ACTION_PREFIX = 'xcsh-approval:';

/**
 * Shows the queue's pending requests in a dialog, one at a time.
 */
export class ApprovalPrompter {
  /**
   * Follow `queue`; nothing is shown until {@link start}.
   */
  constructor(
    private readonly queue: ApprovalQueue,
    private readonly trans: TranslationBundle
  ) {}

  /**
   * Show requests as they come.
   */
  start(): void {
    this.queue.changed.connect(this._onChanged, this);
    this._timer = window.setInterval(() => {
      this.queue.expire();
      this._body?.tick();
    }, 1000);
    this._next();
  }

  /**
   * Stop showing requests (the open dialog closes).
   */
  dispose(): void {
    this.queue.changed.disconnect(this._onChanged, this);
    window.clearInterval(this._timer);
    this._dialog?.reject();
  }

  /**
   * Show one request now (from the activity panel's "Answer…").
   */
  open(id: string): void {
    this._dismissed.delete(id);
    const open = this._dialog !== null && !this._dialog.isDisposed;
    if ((this._shown === id && open) || this._answering.has(id)) {
      return;
    }
    const shown = this._dialog;
    this._dialog = null;
    this._shown = null;
    shown?.reject();
    this._show(id);
  }

  private _onChanged(_: ApprovalQueue, change: ApprovalChange): void {
    if (change.type === 'removed') {
      this._dismissed.delete(change.id);
      if (change.id === this._shown) {
        // Answered in another lab, expired, or answered here: the dialog has nothing to ask.
        this._dialog?.reject();
        if (change.end === 'expired' && !this._answering.has(change.id)) {
          Notification.info(
            this.trans.__(
              'An agent request expired before it was answered; the agent was told.'
            ),
            { autoClose: 5000 }
          );
        }
      }
      return;
    }
    if (change.type === 'added') {
      this._next();
    }
  }

  /**
   * Show the oldest request not shown and not put off, when no dialog is open.
   */
  private _next(): void {
    if (this._shown !== null) {
      return;
    }
    const next = this.queue.pending.find(
      p =>
        !this._dismissed.has(p.approval.id) &&
        !this._answering.has(p.approval.id)
    );
    if (next !== undefined) {
      this._show(next.approval.id);
    }
  }

  private _show(id: string): void {
    const pending = this.queue.get(id);
    if (pending === undefined) {
      return;
    }
    const trans = this.trans;
    const body = new ApprovalBody(pending.approval, pending.deadline, trans);
    const dialog = new Dialog<string>({
      title: trans.__('Allow this agent action?'),
      body,
      buttons: [
        Dialog.cancelButton({
          label: trans.__('Later'),
          caption: trans.__(
            'Close; the request stays in the activity panel until it expires'
          )
        }),
        Dialog.warnButton({
          label: trans.__('Deny'),
          actions: [`${ACTION_PREFIX}deny`]
        }),
        Dialog.okButton({
          label: trans.__('Allow for this notebook'),
          caption: trans.__(
            'Allow this kind of action on this notebook until the server restarts'
          ),
          displayType: 'default',
          actions: [`${ACTION_PREFIX}allow-notebook`]
        }),
        Dialog.okButton({
          label: trans.__('Allow once'),
          actions: [`${ACTION_PREFIX}allow-once`]
        })
      ],
      // Enter (in older labs, even in the reason box) must never allow: it means Later.
      defaultButton: 0,
      hasClose: true
    });
    dialog.addClass('jp-xcsh-ApprovalDialog');
    this._dialog = dialog;
    this._body = body;
    this._shown = id;
    void dialog.launch().then(async result => {
      // A dialog opened since (the panel's "Answer…") is not this one's to clear.
      const current = this._dialog === dialog;
      if (current) {
        this._dialog = null;
        this._body = null;
        this._shown = null;
      }
      const action = result.button.actions.find(a =>
        a.startsWith(ACTION_PREFIX)
      );
      const decision = action?.slice(ACTION_PREFIX.length) as
        ApprovalDecision | undefined;
      if (decision === undefined) {
        // Later, Escape, or closed because the request ended.
        if (current && this.queue.get(id) !== undefined) {
          this._dismissed.add(id);
        }
        this._next();
        return;
      }
      this._answering.add(id);
      const end = await this.queue.answer(
        id,
        decision,
        decision === 'deny' ? (result.value ?? '') : undefined
      );
      this._answering.delete(id);
      if (end === 'conflict') {
        Notification.warning(
          trans.__(
            'Already answered: another lab answered this request first, or it expired.'
          ),
          { autoClose: 8000 }
        );
      } else if (end === null) {
        const error = this.queue.get(id)?.error ?? '';
        Notification.error(
          trans.__('Your answer could not be sent: %1', error),
          { autoClose: 8000 }
        );
        this._dismissed.add(id);
      }
      this._next();
    });
  }

  private _dialog: Dialog<string> | null = null;
  private _body: ApprovalBody | null = null;
  private _shown: string | null = null;
  /** Requests whose answer is on its way (not shown again meanwhile). */
  private _answering = new Set<string>();
  private _dismissed = new Set<string>();
  private _timer = 0;
}
