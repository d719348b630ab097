/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { XcshResponseError } from '../request';
import { ApprovalQueue, type ApprovalChange } from '../policy/approvals';
import { APPROVAL_SCHEMA_ID, parseApprovalEmission } from '../policy/parse';
import type { ApprovalDecision, IApproval } from '../policy/types';

function approval(id: string, fields: Partial<IApproval> = {}): IApproval {
  return {
    id,
    agent: 'claude',
    tool: 'notebook',
    class: 'run',
    summary: `run cell 3 (id ab12) of a.ipynb (${id})`,
    path: 'a.ipynb',
    cellIds: ['ab12'],
    detail: { code: 'train()' },
    askedAt: '2026-01-01T10:00:00Z',
    expiresAt: '2026-01-01T10:02:00Z',
    ...fields
  };
}

function emission(
  kind: string,
  item: IApproval,
  fields: Record<string, unknown> = {}
) {
  return {
    schema_id: APPROVAL_SCHEMA_ID,
    __timestamp__: '2026-01-01T10:00:01Z',
    kind,
    approval: item,
    ...fields
  };
}

/** A server answering approvals: answers recorded; `status` makes the next answer fail. */
class FakeServer {
  answers: [string, ApprovalDecision, string | undefined][] = [];
  pending: IApproval[] = [];
  status: number | null = null;
  async answerApproval(
    id: string,
    decision: ApprovalDecision,
    reason?: string
  ): Promise<IApproval | null> {
    if (this.status !== null) {
      const status = this.status;
      throw new XcshResponseError(
        new Response('{}', { status }),
        status === 409 ? 'Already answered.' : 'Server error.',
        status === 409 ? 'conflict' : null
      );
    }
    this.answers.push([id, decision, reason]);
    return null;
  }
  async listApprovals(): Promise<IApproval[]> {
    return this.pending;
  }
}

function changes(queue: ApprovalQueue): ApprovalChange[] {
  const seen: ApprovalChange[] = [];
  queue.changed.connect((_, change) => seen.push(change));
  return seen;
}

describe('parseApprovalEmission', () => {
  it('reads an approval event and ignores other schemas and malformed ones', () => {
    const event = parseApprovalEmission(
      emission('answered', approval('a1'), {
        decision: 'deny',
        reason: 'not now'
      })
    );
    expect(event).toMatchObject({
      kind: 'answered',
      decision: 'deny',
      reason: 'not now',
      approval: { id: 'a1', class: 'run', detail: { code: 'train()' } }
    });
    expect(event?.time).toBe(Date.parse('2026-01-01T10:00:01Z'));
    expect(
      parseApprovalEmission({
        ...emission('asked', approval('a')),
        schema_id: 'x'
      })
    ).toBeNull();
    expect(
      parseApprovalEmission(emission('pondered', approval('a')))
    ).toBeNull();
    expect(
      parseApprovalEmission({
        ...emission('asked', approval('a')),
        approval: { id: 7 }
      })
    ).toBeNull();
    expect(parseApprovalEmission(null)).toBeNull();
  });

  it('cuts long strings and keeps only string cell ids', () => {
    const event = parseApprovalEmission(
      emission('asked', {
        ...approval('a1'),
        summary: 'x'.repeat(5000),
        cellIds: ['c1', 2, null, 'c2'] as never
      })
    );
    expect(event?.approval.summary.length).toBe(1024);
    expect(event?.approval.cellIds).toEqual(['c1', 'c2']);
  });
});

describe('ApprovalQueue', () => {
  it('adds an asked request, logs it, and ends it when another lab answers', () => {
    const queue = new ApprovalQueue(new FakeServer());
    const seen = changes(queue);
    queue.handleEmission(emission('asked', approval('a1')));
    expect(queue.pending.map(p => p.approval.id)).toEqual(['a1']);
    queue.handleEmission(
      emission('answered', approval('a1'), { decision: 'allow-once' })
    );
    expect(queue.pending).toEqual([]);
    expect(seen).toContainEqual({ type: 'removed', id: 'a1', end: 'answered' });
    expect(queue.log.map(e => e.kind).sort()).toEqual(['answered', 'asked']);
  });

  it('keeps requests oldest first and never brings an ended one back', () => {
    const queue = new ApprovalQueue(new FakeServer());
    queue.handleEmission(emission('asked', approval('a1')));
    queue.handleEmission(emission('asked', approval('a2')));
    expect(queue.pending.map(p => p.approval.id)).toEqual(['a1', 'a2']);
    queue.handleEmission(emission('expired', approval('a1')));
    // A late `asked` (or a stale poll) of an ended request.
    queue.handleEmission(emission('asked', approval('a1')));
    queue.sync([approval('a1'), approval('a2')], new Set());
    expect(queue.pending.map(p => p.approval.id)).toEqual(['a2']);
  });

  it('logs a refusal without a pending request', () => {
    const queue = new ApprovalQueue(new FakeServer());
    queue.handleEmission(
      emission('refused', approval('r1'), { reason: 'no lab open' })
    );
    expect(queue.pending).toEqual([]);
    expect(queue.log).toMatchObject([
      { kind: 'refused', reason: 'no lab open', approval: { id: 'r1' } }
    ]);
  });

  it('takes a poll: new requests added, known ones gone from the server ended', async () => {
    const server = new FakeServer();
    const queue = new ApprovalQueue(server);
    server.pending = [approval('a1'), approval('a2')];
    await queue.poll();
    expect(queue.pending.map(p => p.approval.id)).toEqual(['a1', 'a2']);
    expect(queue.log.filter(e => e.kind === 'asked')).toHaveLength(2);
    const seen = changes(queue);
    server.pending = [approval('a2')];
    await queue.poll();
    expect(queue.pending.map(p => p.approval.id)).toEqual(['a2']);
    expect(seen).toEqual([{ type: 'removed', id: 'a1', end: 'ended' }]);
  });

  it('does not end a request asked while a poll was on its way', () => {
    const queue = new ApprovalQueue(new FakeServer());
    const known = new Set<string>(); // the poll started before a1 was asked
    queue.handleEmission(emission('asked', approval('a1')));
    queue.sync([], known);
    expect(queue.pending.map(p => p.approval.id)).toEqual(['a1']);
  });

  it('answers through the server, with the reason of a deny', async () => {
    const server = new FakeServer();
    const queue = new ApprovalQueue(server);
    queue.handleEmission(emission('asked', approval('a1')));
    expect(await queue.answer('a1', 'deny', 'too expensive')).toBe('answered');
    expect(server.answers).toEqual([['a1', 'deny', 'too expensive']]);
    expect(queue.pending).toEqual([]);
  });

  it('ends a request as a conflict on 409 (another lab answered first)', async () => {
    const server = new FakeServer();
    const queue = new ApprovalQueue(server);
    const seen = changes(queue);
    queue.handleEmission(emission('asked', approval('a1')));
    server.status = 409;
    expect(await queue.answer('a1', 'allow-once')).toBe('conflict');
    expect(queue.pending).toEqual([]);
    expect(seen).toContainEqual({ type: 'removed', id: 'a1', end: 'conflict' });
  });

  it('keeps a request pending with the error when the answer fails otherwise', async () => {
    const server = new FakeServer();
    const queue = new ApprovalQueue(server);
    queue.handleEmission(emission('asked', approval('a1')));
    server.status = 500;
    expect(await queue.answer('a1', 'allow-notebook')).toBeNull();
    expect(queue.get('a1')).toMatchObject({
      answering: false,
      error: 'Server error.'
    });
  });

  it('ends requests whose time is up, by its own clock (the time to answer from arrival)', () => {
    let now = Date.parse('2030-06-01T00:00:00Z'); // this page's clock is far off the server's
    const queue = new ApprovalQueue(new FakeServer(), { now: () => now });
    queue.handleEmission(emission('asked', approval('a1'))); // 2 min to answer
    queue.handleEmission(
      emission('asked', approval('a2', { expiresAt: '2026-01-01T11:00:00Z' }))
    );
    expect(queue.get('a1')?.deadline).toBe(now + 120000);
    queue.expire();
    expect(queue.pending).toHaveLength(2);
    now += 121000;
    queue.expire();
    expect(queue.pending.map(p => p.approval.id)).toEqual(['a2']);
  });

  it('takes past events from the history into the log only', () => {
    const queue = new ApprovalQueue(new FakeServer());
    queue.restore(emission('asked', approval('old')));
    queue.restore({ schema_id: 'another', kind: 'asked' });
    expect(queue.pending).toEqual([]);
    expect(queue.log.map(e => e.key)).toEqual(['old/asked']);
  });

  it('bounds the log, newest first', () => {
    const queue = new ApprovalQueue(new FakeServer(), { maxLog: 3 });
    for (let i = 0; i < 5; i++) {
      queue.handleEmission({
        ...emission('refused', approval(`r${i}`)),
        __timestamp__: `2026-01-01T10:00:0${i}Z`
      });
    }
    expect(queue.log.map(e => e.approval.id)).toEqual(['r4', 'r3', 'r2']);
  });
});
