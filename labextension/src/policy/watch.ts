/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The lab's long poll of the approvals (no DOM here): `GET /api/xcsh/approvals?wait=30&since=`
 * held by the server until an ask, answer or expiry changes the list, issued again as soon as
 * it answers. A held request is what tells the server a lab is open: re-issued on the answer,
 * not by a timer, it keeps going in a background tab, whose timers the browser slows to about
 * once a minute. After a failure it waits {@link ApprovalWatch.BACKOFF_MS} (1, 2, 5, then
 * 10 s) and asks without `since` (a restarted server answers at once).
 */

import type { ApprovalQueue } from './approvals';
import type { IApproval } from './types';

/**
 * One answer of `GET /api/xcsh/approvals`.
 */
export interface IApprovalList {
  /** The pending approvals, oldest first. */
  approvals: IApproval[];
  /** Their version, or `null` from a server without long polls. */
  version: number | null;
}

/**
 * One request of the loop: hold while the version is `since` (`null`: answer at once).
 */
export interface IApprovalWatchQuery {
  since: number | null;
  /** Seconds the server may hold the request. */
  wait: number;
  /** Aborted when the watch is disposed. */
  signal: AbortSignal;
}

/**
 * The long-poll loop feeding an {@link ApprovalQueue}.
 */
export class ApprovalWatch {
  /**
   * Create a stopped watch; {@link start} starts it.
   */
  constructor(options: ApprovalWatch.IOptions) {
    this._queue = options.queue;
    this._fetch = options.fetch;
    this._sleep = options.sleep ?? sleep;
    this._onError = options.onError ?? (() => undefined);
  }

  /**
   * Whether {@link dispose} was called: no request is sent after it.
   */
  get isDisposed(): boolean {
    return this._abort.signal.aborted;
  }

  /**
   * Start the loop (once); resolves when it stops (after {@link dispose}).
   */
  start(): Promise<void> {
    if (this._running === null) {
      this._running = this._run();
    }
    return this._running;
  }

  /**
   * Stop the loop: the request on its way is aborted, a wait after a failure cut short.
   */
  dispose(): void {
    this._abort.abort();
  }

  private async _run(): Promise<void> {
    const signal = this._abort.signal;
    let since: number | null = null;
    let failures = 0;
    while (!signal.aborted) {
      const known = new Set(this._queue.pending.map(p => p.approval.id));
      let answer: IApprovalList;
      try {
        answer = await this._fetch({
          since,
          wait: ApprovalWatch.WAIT_S,
          signal
        });
      } catch (error) {
        if (signal.aborted) {
          break;
        }
        this._onError(error);
        const steps = ApprovalWatch.BACKOFF_MS;
        await this._sleep(steps[Math.min(failures, steps.length - 1)], signal);
        failures += 1;
        since = null;
        continue;
      }
      if (signal.aborted) {
        break;
      }
      failures = 0;
      this._queue.sync(answer.approvals, known);
      since = answer.version;
      if (since === null) {
        // A server that answers at once whatever is asked: poll, do not spin.
        await this._sleep(ApprovalWatch.FALLBACK_MS, signal);
      }
    }
  }

  private _queue: Pick<ApprovalQueue, 'pending' | 'sync'>;
  private _fetch: (query: IApprovalWatchQuery) => Promise<IApprovalList>;
  private _sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  private _onError: (error: unknown) => void;
  private _abort = new AbortController();
  private _running: Promise<void> | null = null;
}

/**
 * The namespace for {@link ApprovalWatch} statics.
 */
export namespace ApprovalWatch {
  /**
   * What a watch needs.
   */
  export interface IOptions {
    /** Where the answers go. */
    queue: Pick<ApprovalQueue, 'pending' | 'sync'>;
    /** One request (`policyAPI(...).watchApprovals`). */
    fetch: (query: IApprovalWatchQuery) => Promise<IApprovalList>;
    /** Wait `ms`, or less when `signal` is aborted (tests give their own). */
    sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
    /** Told of each failed request (the loop goes on). */
    onError?: (error: unknown) => void;
  }

  /** Seconds the server may hold a request (its most). */
  export const WAIT_S = 30;

  /** The waits after the 1st, 2nd, 3rd and each later failure in a row. */
  export const BACKOFF_MS: readonly number[] = [1000, 2000, 5000, 10000];

  /** The wait between requests to a server whose answers have no version. */
  export const FALLBACK_MS = 10000;
}

/**
 * Resolve after `ms`, or at once when `signal` is aborted.
 */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise(resolve => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const done = () => {
      window.clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = window.setTimeout(done, ms);
    signal.addEventListener('abort', done);
  });
}
