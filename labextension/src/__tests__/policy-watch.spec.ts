/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { ApprovalQueue } from '../policy/approvals';
import type { IApproval } from '../policy/types';
import {
  ApprovalWatch,
  type IApprovalList,
  type IApprovalWatchQuery
} from '../policy/watch';

function approval(id: string): IApproval {
  return {
    id,
    agent: 'claude',
    tool: 'notebook',
    class: 'run',
    summary: `run cell 1 of a.ipynb (${id})`,
    path: 'a.ipynb',
    cellIds: ['c1'],
    detail: {},
    askedAt: '2026-01-01T10:00:00Z',
    expiresAt: '2026-01-01T10:02:00Z'
  };
}

/**
 * A scripted server: each request takes the next step (an answer, or an error to throw);
 * past the script, the request is held until the watch aborts it. Everything the loop does
 * (requests with their `since`, waits) is recorded in order.
 */
class Script {
  steps: (IApprovalList | Error)[] = [];
  trace: string[] = [];
  signals: AbortSignal[] = [];
  ended: Promise<void>;
  private _end!: () => void;

  constructor(steps: (IApprovalList | Error)[]) {
    this.steps = steps;
    this.ended = new Promise(resolve => (this._end = resolve));
  }

  fetch = async (query: IApprovalWatchQuery): Promise<IApprovalList> => {
    this.trace.push(`get since=${query.since} wait=${query.wait}`);
    this.signals.push(query.signal);
    const step = this.steps.shift();
    if (step === undefined) {
      this._end();
      return new Promise((_, reject) =>
        query.signal.addEventListener('abort', () =>
          reject(new Error('aborted'))
        )
      );
    }
    if (step instanceof Error) {
      throw step;
    }
    return step;
  };

  sleep = async (ms: number): Promise<void> => {
    this.trace.push(`sleep ${ms}`);
  };
}

function start(script: Script, queue = new ApprovalQueue(api())) {
  const errors: unknown[] = [];
  const watch = new ApprovalWatch({
    queue,
    fetch: script.fetch,
    sleep: script.sleep,
    onError: error => errors.push(error)
  });
  const stopped = watch.start();
  return { watch, queue, errors, stopped };
}

function api() {
  return {
    answerApproval: async () => null,
    listApprovals: async () => []
  };
}

const list = (version: number | null, ...ids: string[]): IApprovalList => ({
  approvals: ids.map(approval),
  version
});

describe('ApprovalWatch', () => {
  it('issues the next request at once with the version of the last answer', async () => {
    const script = new Script([list(7), list(8, 'a1'), list(9)]);
    const { watch, queue, stopped } = start(script);
    const added: string[] = [];
    const removed: string[] = [];
    queue.changed.connect((_, change) => {
      if (change.type === 'added') {
        added.push(change.id);
      } else if (change.type === 'removed') {
        removed.push(`${change.id}:${change.end}`);
      }
    });
    await script.ended;
    expect(script.trace).toEqual([
      'get since=null wait=30',
      'get since=7 wait=30',
      'get since=8 wait=30',
      'get since=9 wait=30'
    ]);
    expect(added).toEqual(['a1']);
    expect(removed).toEqual(['a1:ended']); // gone from the server's list at version 9
    watch.dispose();
    await stopped;
    expect(script.signals.every(signal => signal.aborted)).toBe(true);
  });

  it('backs off 1, 2, 5, then 10 s after failures, asking without since, and starts over after an answer', async () => {
    const fail = new Error('network');
    const script = new Script([
      list(3),
      fail,
      fail,
      fail,
      fail,
      fail,
      list(4),
      fail,
      list(5)
    ]);
    const { watch, errors, stopped } = start(script);
    await script.ended;
    expect(script.trace).toEqual([
      'get since=null wait=30',
      'get since=3 wait=30',
      'sleep 1000',
      'get since=null wait=30',
      'sleep 2000',
      'get since=null wait=30',
      'sleep 5000',
      'get since=null wait=30',
      'sleep 10000',
      'get since=null wait=30',
      'sleep 10000',
      'get since=null wait=30',
      'get since=4 wait=30',
      'sleep 1000',
      'get since=null wait=30',
      'get since=5 wait=30'
    ]);
    expect(errors).toHaveLength(6);
    watch.dispose();
    await stopped;
  });

  it('polls every 10 s, not in a tight loop, a server whose answers have no version', async () => {
    const script = new Script([list(null), list(null, 'a1')]);
    const { watch, queue, stopped } = start(script);
    await script.ended;
    expect(script.trace).toEqual([
      'get since=null wait=30',
      'sleep 10000',
      'get since=null wait=30',
      'sleep 10000',
      'get since=null wait=30'
    ]);
    expect(queue.pending.map(p => p.approval.id)).toEqual(['a1']);
    watch.dispose();
    await stopped;
  });

  it('stops when disposed: the held request aborted, nothing sent or taken after', async () => {
    let answer!: (value: IApprovalList) => void;
    const requests: IApprovalWatchQuery[] = [];
    const queue = new ApprovalQueue(api());
    const watch = new ApprovalWatch({
      queue,
      fetch: query => {
        requests.push(query);
        return new Promise(resolve => (answer = resolve));
      },
      sleep: async () => undefined
    });
    const stopped = watch.start();
    expect(watch.start()).toBe(stopped); // once
    await Promise.resolve();
    expect(requests).toHaveLength(1);
    watch.dispose();
    expect(watch.isDisposed).toBe(true);
    expect(requests[0].signal.aborted).toBe(true);
    answer(list(2, 'late')); // an answer that comes anyway is not taken
    await stopped;
    expect(requests).toHaveLength(1);
    expect(queue.pending).toEqual([]);
  });

  it('does not end a request the events added while a request was held', async () => {
    let answer!: (value: IApprovalList) => void;
    const queue = new ApprovalQueue(api());
    const watch = new ApprovalWatch({
      queue,
      fetch: () => new Promise(resolve => (answer = resolve)),
      sleep: async () => undefined
    });
    void watch.start();
    await Promise.resolve();
    queue.apply({
      kind: 'asked',
      approval: approval('e1'),
      decision: null,
      reason: null,
      time: 0
    });
    answer(list(1)); // sent before e1 was asked: says nothing of it
    await Promise.resolve();
    await Promise.resolve();
    expect(queue.pending.map(p => p.approval.id)).toEqual(['e1']);
    watch.dispose();
  });
});
