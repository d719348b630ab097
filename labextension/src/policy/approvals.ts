/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The approvals the lab knows of (no DOM here): the requests waiting for the person's answer
 * and the log of asks, answers and refusals, fed by the server's approval events and by the
 * lab's long poll of `GET /api/xcsh/approvals` (`watch.ts`).
 *
 * The first answer of any lab counts: a request goes from the pending list as soon as the
 * server says it was answered or expired (an event, or its absence from a poll), or when its
 * time is up here.
 */

import type { TranslationBundle } from '@jupyterlab/translation';
import { ISignal, Signal } from '@lumino/signaling';

import { XcshResponseError } from '../request';
import { UNTRANSLATED } from '../translation';
import type { IPolicyAPI } from './api';
import { parseApprovalEmission } from './parse';
import type {
  ApprovalDecision,
  ApprovalEventKind,
  IApproval,
  IApprovalEvent
} from './types';

/**
 * A request waiting for the person, and where this lab's answer stands.
 */
export interface IPendingApproval {
  readonly approval: IApproval;
  /** This lab's answer is on its way. */
  answering: boolean;
  /** Why this lab's last answer failed (the request stays), or `null`. */
  error: string | null;
  /**
   * When it expires, by this page's clock (ms since the epoch), or `null` when the server
   * gave no times: the server's time to answer counted from its arrival, so that a page
   * whose clock is off neither closes it early nor late.
   */
  readonly deadline: number | null;
}

/**
 * One line of the approvals log.
 */
export interface IApprovalLogEntry {
  /** `<approval id>/<kind>`: one line per kind of event per request. */
  readonly key: string;
  readonly kind: ApprovalEventKind;
  readonly approval: IApproval;
  readonly decision: string | null;
  readonly reason: string | null;
  /** ms since the epoch. */
  readonly time: number;
}

/**
 * Why a request left the pending list.
 */
export type ApprovalEnd =
  /** Answered (by this lab or another). */
  | 'answered'
  /** Its time ran out, or the agent's call ended. */
  | 'expired'
  /** No longer pending on the server (a poll): answered elsewhere or expired. */
  | 'ended'
  /** This lab's answer came too late: another answer counted (409). */
  | 'conflict';

/**
 * What changed in the queue.
 */
export type ApprovalChange =
  | { type: 'added'; id: string }
  | { type: 'removed'; id: string; end: ApprovalEnd }
  | { type: 'updated'; id: string }
  | { type: 'logged'; key: string };

/**
 * The pending approvals, oldest first, and the log, newest first.
 */
export class ApprovalQueue {
  /**
   * Create an empty queue answering through `api`.
   */
  constructor(
    private readonly api: Pick<IPolicyAPI, 'answerApproval' | 'listApprovals'>,
    options: ApprovalQueue.IOptions = {}
  ) {
    this._maxLog = options.maxLog ?? ApprovalQueue.MAX_LOG;
    this._trans = options.trans ?? UNTRANSLATED;
    this._now = options.now ?? Date.now;
  }

  /**
   * Emitted once per change.
   */
  get changed(): ISignal<this, ApprovalChange> {
    return this._changed;
  }

  /**
   * The requests waiting for an answer, oldest first.
   */
  get pending(): readonly IPendingApproval[] {
    return [...this._pending.values()];
  }

  /**
   * The log of asks, answers, expiries and refusals, newest first.
   */
  get log(): readonly IApprovalLogEntry[] {
    return this._log;
  }

  /**
   * The pending request with this id, if any.
   */
  get(id: string): IPendingApproval | undefined {
    return this._pending.get(id);
  }

  /**
   * Take one raw emission of the event bus; others' emissions are ignored.
   *
   * @returns Whether it was an approval event.
   */
  handleEmission(emission: unknown): boolean {
    const event = parseApprovalEmission(emission);
    if (event === null) {
      return false;
    }
    this.apply(event);
    return true;
  }

  /**
   * Take one event of the server's activity history (before this page): it goes into the
   * log only; what is pending is the poll's to say.
   */
  restore(emission: unknown): void {
    const event = parseApprovalEmission(emission);
    if (event !== null) {
      this._addLog(event);
    }
  }

  /**
   * Apply an approval event.
   */
  apply(event: IApprovalEvent): void {
    const { approval } = event;
    if (event.kind === 'asked') {
      if (!this._ended.has(approval.id)) {
        this._add(approval);
      }
    } else if (event.kind === 'answered' || event.kind === 'expired') {
      this._end(approval.id, event.kind);
    }
    this._addLog(event);
  }

  /**
   * Take what a poll of the server answered: requests not known yet are added; those known
   * when the poll started (`known`) and no longer pending on the server have ended.
   */
  sync(approvals: readonly IApproval[], known: ReadonlySet<string>): void {
    const live = new Set(approvals.map(a => a.id));
    for (const id of known) {
      if (!live.has(id)) {
        this._end(id, 'ended');
      }
    }
    for (const approval of approvals) {
      if (!this._pending.has(approval.id) && !this._ended.has(approval.id)) {
        this._add(approval);
        this._addLog({
          kind: 'asked',
          approval,
          decision: null,
          reason: null,
          time: Date.parse(approval.askedAt) || this._now()
        });
      }
    }
  }

  /**
   * Ask the server once for the pending approvals (the long poll, `watch.ts`, syncs the same way).
   */
  async poll(): Promise<void> {
    const known = new Set(this._pending.keys());
    this.sync(await this.api.listApprovals(), known);
  }

  /**
   * End the requests whose time is up.
   */
  expire(now = this._now()): void {
    for (const { approval, deadline } of this.pending) {
      if (deadline !== null && deadline <= now) {
        this._end(approval.id, 'expired');
      }
    }
  }

  /**
   * Answer a request. A 409 (another lab answered first, or the request expired) ends it
   * here as `conflict`; any other failure is kept in its `error` and it stays pending.
   *
   * @returns How the request ended, or `null` when it is still pending (a failure).
   */
  async answer(
    id: string,
    decision: ApprovalDecision,
    reason?: string
  ): Promise<ApprovalEnd | null> {
    const entry = this._pending.get(id);
    if (entry === undefined) {
      return 'conflict';
    }
    if (entry.answering) {
      return null;
    }
    entry.answering = true;
    entry.error = null;
    this._changed.emit({ type: 'updated', id });
    try {
      await this.api.answerApproval(id, decision, reason);
      this._end(id, 'answered');
      return 'answered';
    } catch (error) {
      const status =
        error instanceof XcshResponseError ? error.response.status : null;
      if (status === 409 || status === 404) {
        this._end(id, 'conflict');
        return 'conflict';
      }
      const current = this._pending.get(id);
      if (current !== undefined) {
        current.answering = false;
        current.error =
          error instanceof Error
            ? error.message
            : this._trans.__('The answer could not be sent.');
        this._changed.emit({ type: 'updated', id });
      }
      return null;
    }
  }

  private _add(approval: IApproval): void {
    if (this._pending.has(approval.id)) {
      return;
    }
    const asked = Date.parse(approval.askedAt);
    const expires = Date.parse(approval.expiresAt);
    const deadline =
      Number.isFinite(asked) && Number.isFinite(expires)
        ? this._now() + Math.max(0, expires - asked)
        : null;
    this._pending.set(approval.id, {
      approval,
      answering: false,
      error: null,
      deadline
    });
    this._changed.emit({ type: 'added', id: approval.id });
  }

  private _end(id: string, end: ApprovalEnd): void {
    this._remember(id);
    if (this._pending.delete(id)) {
      this._changed.emit({ type: 'removed', id, end });
    }
  }

  /**
   * Remember an ended request, so that a late `asked` or a stale poll does not bring it back.
   */
  private _remember(id: string): void {
    this._ended.add(id);
    if (this._ended.size > ApprovalQueue.MAX_ENDED) {
      const oldest = this._ended.values().next().value;
      if (oldest !== undefined) {
        this._ended.delete(oldest);
      }
    }
  }

  private _addLog(event: IApprovalEvent): void {
    const key = `${event.approval.id}/${event.kind}`;
    if (this._log.some(entry => entry.key === key)) {
      return;
    }
    this._log.unshift({
      key,
      kind: event.kind,
      approval: event.approval,
      decision: event.decision,
      reason: event.reason,
      time: event.time
    });
    this._log.sort((a, b) => b.time - a.time);
    this._log.length = Math.min(this._log.length, this._maxLog);
    this._changed.emit({ type: 'logged', key });
  }

  private _pending = new Map<string, IPendingApproval>();
  private _ended = new Set<string>();
  private _log: IApprovalLogEntry[] = [];
  private _maxLog: number;
  private _trans: TranslationBundle;
  private _now: () => number;
  private _changed = new Signal<this, ApprovalChange>(this);
}

/**
 * The namespace for {@link ApprovalQueue} statics.
 */
export namespace ApprovalQueue {
  /**
   * The options of a queue.
   */
  export interface IOptions {
    /** The most log lines kept (default {@link MAX_LOG}). */
    maxLog?: number;
    /** The extension's strings in the lab's language. */
    trans?: TranslationBundle;
    /** The clock (ms since the epoch), for tests. */
    now?: () => number;
  }

  /** The default bound of the log. */
  export const MAX_LOG = 200;

  /** How many ended request ids are remembered. */
  export const MAX_ENDED = 1000;

  /** How often the lab refreshes the agent access it shows (10 s). */
  export const POLL_MS = 10000;
}
