/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { NOTEBOOK_SCHEMA_ID, PYTHON_SCHEMA_ID } from '../core/events';
import {
  ActivityChange,
  ActivityModel,
  IPythonCall,
  isRunning
} from '../core/activity';

function notebook(callId: string, fields: Record<string, unknown> = {}) {
  return {
    schema_id: NOTEBOOK_SCHEMA_ID,
    callId,
    action: 'insert',
    path: 'a.ipynb',
    status: 'ok',
    cellIndex: 0,
    cellType: 'code',
    source: 'print(1)',
    ...fields
  };
}

function python(callId: string, fields: Record<string, unknown>) {
  return { schema_id: PYTHON_SCHEMA_ID, callId, session: 'default', ...fields };
}

function started(callId: string, n = 2) {
  return python(callId, {
    event: 'started',
    cells: Array.from({ length: n }, (_, i) => ({
      index: i,
      title: `step ${i + 1}`,
      code: `print(${i})`
    }))
  });
}

function pythonCall(model: ActivityModel, id: string): IPythonCall {
  const call = model.get(id);
  if (call?.kind !== 'python') {
    throw new Error(`no python call ${id}`);
  }
  return call;
}

describe('ActivityModel', () => {
  it('lists calls newest first', () => {
    const model = new ActivityModel();
    model.handleEmission(notebook('a'));
    model.handleEmission(started('b'));
    model.handleEmission(notebook('c'));
    expect(model.calls.map(call => call.id)).toEqual(['c', 'b', 'a']);
  });

  it('signals added, updated and removed calls', () => {
    const model = new ActivityModel();
    const changes: ActivityChange[] = [];
    model.changed.connect((_, change) => changes.push(change));
    model.handleEmission(started('p'));
    model.handleEmission(
      python('p', { event: 'cell', cellIndex: 0, status: 'running' })
    );
    model.handleEmission(python('p', { event: 'finished', result: {} }));
    model.clear();
    expect(changes).toEqual([
      { type: 'added', id: 'p' },
      { type: 'updated', id: 'p' },
      { type: 'updated', id: 'p' },
      { type: 'removed', id: 'p' }
    ]);
  });

  it('ignores what it cannot parse and says so', () => {
    const model = new ActivityModel();
    expect(model.handleEmission({ schema_id: 'other', callId: 'x' })).toBe(
      false
    );
    expect(model.handleEmission(null)).toBe(false);
    expect(model.calls).toHaveLength(0);
  });

  it('moves cells pending → running → complete as events arrive', () => {
    const model = new ActivityModel();
    model.handleEmission(started('p'));
    const call = pythonCall(model, 'p');
    expect(call.cells.map(c => c.status)).toEqual(['pending', 'pending']);
    model.handleEmission(
      python('p', { event: 'cell', cellIndex: 0, status: 'running' })
    );
    expect(call.cells.map(c => c.status)).toEqual(['running', 'pending']);
    model.handleEmission(
      python('p', { event: 'cell', cellIndex: 0, status: 'complete' })
    );
    model.handleEmission(
      python('p', { event: 'cell', cellIndex: 1, status: 'running' })
    );
    expect(call.cells.map(c => c.status)).toEqual(['complete', 'running']);
    expect(call.status).toBe('running');
    expect(isRunning(call)).toBe(true);
  });

  it('replaces the output tail with each chunk', () => {
    const model = new ActivityModel();
    model.handleEmission(started('p', 1));
    model.handleEmission(
      python('p', { event: 'chunk', cellIndex: 0, text: '1\n' })
    );
    model.handleEmission(
      python('p', { event: 'chunk', cellIndex: 0, text: '1\n2\n' })
    );
    const cell = pythonCall(model, 'p').cells[0];
    expect(cell.output).toBe('1\n2\n');
    // Output means the cell runs, even if its status event was missed.
    expect(cell.status).toBe('running');
  });

  it('takes the final statuses and durations from the result', () => {
    const model = new ActivityModel();
    model.handleEmission(started('p', 3));
    model.handleEmission(
      python('p', { event: 'cell', cellIndex: 0, status: 'running' })
    );
    model.handleEmission(
      python('p', { event: 'cell', cellIndex: 0, status: 'complete' })
    );
    model.handleEmission(
      python('p', { event: 'cell', cellIndex: 1, status: 'running' })
    );
    model.handleEmission(
      python('p', {
        event: 'finished',
        result: {
          isError: true,
          text: 'Cell 2 failed (exit code 1).',
          durationMs: 40,
          cells: [
            { index: 0, status: 'complete', durationMs: 10, exitCode: 0 },
            { index: 1, status: 'error', durationMs: 30, exitCode: 1 },
            { index: 2, status: 'pending', durationMs: null, exitCode: null }
          ]
        }
      })
    );
    const call = pythonCall(model, 'p');
    expect(call.status).toBe('error');
    expect(call.cells.map(c => [c.status, c.durationMs, c.exitCode])).toEqual([
      ['complete', 10, 0],
      ['error', 30, 1],
      ['pending', null, null]
    ]);
    expect(isRunning(call)).toBe(false);
  });

  it('marks a cancelled or timed-out call, and no cell stays running', () => {
    const model = new ActivityModel();
    for (const [id, result, status] of [
      ['c', { cancelled: true, isError: true }, 'cancelled'],
      ['t', { timedOut: true, isError: true }, 'timedOut'],
      ['o', { isError: false }, 'ok']
    ] as const) {
      model.handleEmission(started(id, 1));
      model.handleEmission(
        python(id, { event: 'cell', cellIndex: 0, status: 'running' })
      );
      model.handleEmission(python(id, { event: 'finished', result }));
      const call = pythonCall(model, id);
      expect(call.status).toBe(status);
      expect(call.cells[0].status).toBe(status === 'ok' ? 'complete' : 'error');
    }
  });

  it('ignores progress that arrives after the result', () => {
    const model = new ActivityModel();
    model.handleEmission(started('p', 1));
    model.handleEmission(
      python('p', {
        event: 'finished',
        result: { cells: [{ index: 0, status: 'complete' }] }
      })
    );
    expect(
      model.handleEmission(
        python('p', { event: 'cell', cellIndex: 0, status: 'running' })
      )
    ).toBe(false);
    expect(
      model.handleEmission(
        python('p', { event: 'chunk', cellIndex: 0, text: 'late' })
      )
    ).toBe(false);
    expect(pythonCall(model, 'p').cells[0]).toMatchObject({
      status: 'complete',
      output: ''
    });
  });

  it('builds a call whose started event was missed', () => {
    const model = new ActivityModel();
    model.handleEmission(
      python('p', { event: 'chunk', cellIndex: 1, text: 'hi' })
    );
    const call = pythonCall(model, 'p');
    expect(call.started).toBe(false);
    expect(call.cells.map(c => [c.index, c.status, c.output])).toEqual([
      [1, 'running', 'hi']
    ]);
    // A late started event fills in titles and code, keeping the progress.
    model.handleEmission(started('p', 2));
    expect(call.cells.map(c => [c.index, c.title, c.output])).toEqual([
      [0, 'step 1', ''],
      [1, 'step 2', 'hi']
    ]);
  });

  it('adds no placeholder cells for a stray cell index', () => {
    const model = new ActivityModel();
    model.handleEmission(
      python('p', { event: 'chunk', cellIndex: 999, text: 'x' })
    );
    model.handleEmission(
      python('p', { event: 'cell', cellIndex: 3, status: 'running' })
    );
    expect(pythonCall(model, 'p').cells.map(c => c.index)).toEqual([3, 999]);
  });

  it('keeps status events per cell and bounds them', () => {
    const model = new ActivityModel();
    model.handleEmission(started('p', 1));
    for (let i = 0; i < ActivityModel.MAX_STATUS_EVENTS + 5; i++) {
      model.handleEmission(
        python('p', {
          event: 'display',
          cellIndex: 0,
          display: { kind: 'status', data: { op: 'step', i } }
        })
      );
    }
    const cell = pythonCall(model, 'p').cells[0];
    expect(cell.statusEventCount).toBe(ActivityModel.MAX_STATUS_EVENTS + 5);
    expect(cell.statusEvents).toHaveLength(ActivityModel.MAX_STATUS_EVENTS);
    expect(cell.statusEvents[0]).toEqual({ op: 'step', i: 5 });
  });

  it('attaches displays to their cell, or to the call when none is named', () => {
    const model = new ActivityModel();
    model.handleEmission(started('p', 1));
    model.handleEmission(
      python('p', {
        event: 'display',
        cellIndex: 0,
        display: { kind: 'json', data: [1] }
      })
    );
    model.handleEmission(
      python('p', {
        event: 'display',
        display: { kind: 'json', data: { a: 1 } }
      })
    );
    const call = pythonCall(model, 'p');
    expect(call.cells[0].displays).toEqual([{ kind: 'json', data: [1] }]);
    expect(call.displays).toEqual([{ kind: 'json', data: { a: 1 } }]);
  });

  it('drops the oldest finished calls past its bound, never a running one', () => {
    const model = new ActivityModel({ maxCalls: 3 });
    model.handleEmission(started('running'));
    for (const id of ['a', 'b', 'c', 'd']) {
      model.handleEmission(notebook(id));
    }
    expect(model.calls.map(call => call.id)).toEqual(['d', 'c', 'running']);
  });

  it('clears finished calls and keeps running ones', () => {
    const model = new ActivityModel();
    model.handleEmission(notebook('n'));
    model.handleEmission(started('p'));
    model.clear();
    expect(model.calls.map(call => call.id)).toEqual(['p']);
  });

  it('does not mix a notebook call and a python call with one id', () => {
    const model = new ActivityModel();
    model.handleEmission(notebook('x'));
    expect(model.handleEmission(started('x'))).toBe(false);
    expect(model.get('x')?.kind).toBe('notebook');
  });

  it('counts the calls running now', () => {
    const model = new ActivityModel();
    expect(model.runningCount).toBe(0);
    model.handleEmission(started('a'));
    model.handleEmission(started('b'));
    model.handleEmission(notebook('n'));
    expect(model.runningCount).toBe(2);
    model.handleEmission(
      python('a', { event: 'finished', result: { isError: false, cells: [] } })
    );
    expect(model.runningCount).toBe(1);
  });

  it('keeps the revert status of a notebook call', () => {
    const model = new ActivityModel();
    const changes: ActivityChange[] = [];
    model.handleEmission(notebook('n'));
    model.changed.connect((_, change) => changes.push(change));
    expect(model.get('n')).toMatchObject({
      undo: { state: 'idle' },
      undoOf: null
    });

    model.setUndo('n', { state: 'pending' });
    model.setUndo('n', { state: 'done', by: 'r' });

    expect(model.get('n')).toMatchObject({
      undo: { state: 'done', by: 'r' }
    });
    expect(changes).toEqual([
      { type: 'updated', id: 'n' },
      { type: 'updated', id: 'n' }
    ]);
  });

  it('links a revert call to the call it reverted, before or after its event', () => {
    const model = new ActivityModel();
    model.handleEmission(notebook('early'));
    model.linkUndo('early', 'x');
    model.linkUndo('late', 'y');
    model.handleEmission(notebook('late'));

    expect(model.get('early')).toMatchObject({ undoOf: 'x' });
    expect(model.get('late')).toMatchObject({ undoOf: 'y' });
  });

  it('tracks an interrupt request until the result arrives', () => {
    const model = new ActivityModel();
    model.handleEmission(started('p', 1));
    model.setInterrupting('p', true, null);
    expect(pythonCall(model, 'p').interrupting).toBe(true);
    model.handleEmission(
      python('p', { event: 'finished', result: { cancelled: true } })
    );
    expect(pythonCall(model, 'p')).toMatchObject({
      interrupting: false,
      status: 'cancelled'
    });
    model.setInterrupting('missing', true, null);
  });

  it('survives a storm of random payloads', () => {
    const model = new ActivityModel();
    const values: unknown[] = [
      null,
      undefined,
      true,
      -1,
      1.5,
      1e12,
      'x',
      '',
      [],
      {},
      [1, 'a'],
      { kind: 'image' },
      { index: 'x' },
      { op: 3 }
    ];
    const pick = (i: number) => values[i % values.length];
    const events = ['started', 'cell', 'chunk', 'display', 'finished', 'x'];
    for (let i = 0; i < 2000; i++) {
      const emission: Record<string, unknown> = {
        schema_id: i % 3 === 0 ? NOTEBOOK_SCHEMA_ID : PYTHON_SCHEMA_ID,
        callId: i % 7 === 0 ? pick(i) : `c${i % 11}`,
        event: events[i % events.length],
        action: pick(i + 1),
        path: i % 2 ? 'a.ipynb' : pick(i + 2),
        status: i % 5 === 0 ? 'ok' : pick(i + 3),
        cellIndex: i % 4 === 0 ? i % 9 : pick(i + 4),
        cells:
          i % 2
            ? [pick(i), { index: i % 3, title: pick(i), code: 'x' }]
            : pick(i),
        text: pick(i + 5),
        display: {
          kind: ['image', 'json', 'status'][i % 3],
          data: pick(i + 6)
        },
        result: i % 2 ? pick(i) : { cells: [pick(i), { index: i % 5 }] }
      };
      expect(() => model.handleEmission(emission)).not.toThrow();
    }
    expect(model.calls.length).toBeGreaterThan(0);
  });

  it('tracks the prompt a call waits on until it is answered or the call ends', () => {
    const model = new ActivityModel();
    const runId = 'cd'.repeat(16);
    model.handleEmission(started('p', 1));
    model.handleEmission(
      python('p', {
        event: 'input',
        cellIndex: 0,
        input: { runId, prompt: 'name? ', password: true, state: 'waiting' }
      })
    );
    const call = pythonCall(model, 'p');
    expect(call.input).toEqual({
      runId,
      prompt: 'name? ',
      password: true,
      state: 'waiting'
    });

    model.setAnswering('p', true, null);
    expect(call.answering).toBe(true);
    model.handleEmission(
      python('p', { event: 'input', input: { state: 'answered' } })
    );
    expect(call.input?.state).toBe('answered');
    expect(call.answering).toBe(false);

    model.handleEmission(
      python('p', {
        event: 'input',
        cellIndex: 0,
        input: { runId, prompt: 'again? ', password: false, state: 'waiting' }
      })
    );
    model.handleEmission(
      python('p', {
        event: 'finished',
        result: { isError: true, cancelled: true }
      })
    );
    expect(call.input?.state).toBe('ended');
    model.setAnswering('p', false, 'Run is not waiting for input');
    expect(call.answerError).toBe('Run is not waiting for input');
  });
});
