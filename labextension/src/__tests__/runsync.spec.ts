/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { ServerConnection } from '@jupyterlab/services';

import { interruptCall, IRunResult, runNotebook } from '../client';
import { RUN_SCHEMA_ID, parseEmission } from '../core/events';
import { ActivityModel } from '../core/activity';
import {
  AGENT_RUNNING_CLASS,
  applyRunOutputs,
  applyRunState,
  findRunCell,
  parseRunOutputs,
  RunCellTracker,
  showAgentRunning
} from '../runsync';

function outputsEmission(
  extra: Record<string, unknown> = {}
): Record<string, unknown> {
  return {
    schema_id: RUN_SCHEMA_ID,
    callId: 'r1',
    event: 'outputs',
    path: 'a.ipynb',
    cellId: 'a',
    cellIndex: 0,
    executionCount: 3,
    outputs: [{ output_type: 'stream', name: 'stdout', text: 'hi\n' }],
    outputsCut: false,
    final: true,
    lastModified: '2026-01-01T00:00:00Z',
    ...extra
  };
}

/**
 * Cell models as the lab's `NotebookModel.cells` holds them (only what a run touches).
 */
class FakeCell {
  constructor(
    readonly id: string,
    readonly type: string
  ) {}
  outputs = {
    values: [] as unknown[],
    fromJSON(values: unknown[]): void {
      this.values = [...values];
    }
  };
  executionCount: number | null = null;
  executionState: 'idle' | 'running' = 'idle';
}

function notebook(): {
  length: number;
  get(i: number): FakeCell;
  list: FakeCell[];
} {
  const list = [
    new FakeCell('a', 'code'),
    new FakeCell('b', 'markdown'),
    new FakeCell('c', 'code')
  ];
  return { list, length: list.length, get: (i: number) => list[i] };
}

describe('parseRunOutputs', () => {
  it('reads the outputs of a cell', () => {
    expect(parseRunOutputs(outputsEmission())).toEqual({
      path: 'a.ipynb',
      cellId: 'a',
      cellIndex: 0,
      executionCount: 3,
      outputs: [{ output_type: 'stream', name: 'stdout', text: 'hi\n' }],
      final: true,
      lastModified: '2026-01-01T00:00:00Z'
    });
  });

  it('reads outputs left out of the event as null', () => {
    const event = parseRunOutputs(
      outputsEmission({ outputs: undefined, outputsCut: true })
    );
    expect(event?.outputs).toBeNull();
  });

  it.each([
    ['another schema', { schema_id: 'https://example.org/x' }],
    ['another event', { event: 'chunk' }],
    ['no path', { path: 3 }],
    ['a negative index', { cellIndex: -1 }]
  ])('ignores %s', (_, extra) => {
    expect(parseRunOutputs(outputsEmission(extra))).toBeNull();
  });

  it('drops outputs that are not nbformat outputs', () => {
    const event = parseRunOutputs(
      outputsEmission({
        outputs: [42, { text: 'no type' }, { output_type: 'x' }]
      })
    );
    expect(event?.outputs).toEqual([{ output_type: 'x' }]);
  });
});

describe('applyRunOutputs', () => {
  it('replaces the outputs and count of the cell with that id', () => {
    const cells = notebook();
    const event = parseRunOutputs(outputsEmission())!;

    expect(applyRunOutputs(cells, event, event.outputs!)).toBe(true);

    expect(cells.list[0].outputs.values).toEqual([
      { output_type: 'stream', name: 'stdout', text: 'hi\n' }
    ]);
    expect(cells.list[0].executionCount).toBe(3);
    expect(cells.list[2].outputs.values).toEqual([]);
  });

  it('keeps the old count while the cell runs (its prompt shows [*])', () => {
    const cells = notebook();
    cells.list[0].executionCount = 7;
    const event = parseRunOutputs(outputsEmission({ final: false }))!;

    expect(applyRunOutputs(cells, event, event.outputs!)).toBe(true);

    expect(cells.list[0].outputs.values).toHaveLength(1);
    expect(cells.list[0].executionCount).toBe(7);
  });

  it('finds the cell wherever it moved, and never a deleted or markdown cell', () => {
    const cells = notebook();
    cells.list.push(cells.list.shift()!); // the person moved cell a to the end
    expect(findRunCell(cells, { cellId: 'a', cellIndex: 0 })).toBe(2);
    expect(findRunCell(cells, { cellId: 'gone', cellIndex: 0 })).toBe(-1);
    expect(findRunCell(cells, { cellId: 'b', cellIndex: 0 })).toBe(-1);
    expect(findRunCell(cells, { cellId: null, cellIndex: 0 })).toBe(-1);
    expect(findRunCell(cells, { cellId: null, cellIndex: 1 })).toBe(1);
  });

  it('leaves the notebook alone when the cell is gone', () => {
    const cells = notebook();
    const event = parseRunOutputs(outputsEmission({ cellId: 'gone' }))!;
    expect(applyRunOutputs(cells, event, [])).toBe(false);
  });
});

describe('a cell running in place', () => {
  function runEvent(event: string, extra: Record<string, unknown> = {}) {
    return {
      schema_id: RUN_SCHEMA_ID,
      callId: 'r1',
      event,
      path: 'a.ipynb',
      ...extra
    };
  }

  it('shows [*] while it runs and its count once it ended', () => {
    const tracker = new RunCellTracker();
    const nb = notebook();
    nb.list[2].executionCount = 4;
    expect(
      tracker.parse(
        runEvent('started', {
          cells: [{ index: 0, title: 'cell 2', code: '', cellId: 'c' }]
        })
      )
    ).toBeNull();

    const running = tracker.parse(
      runEvent('cell', { cellIndex: 0, status: 'running' })
    );
    expect(running).toEqual({ path: 'a.ipynb', cellIds: ['c'], running: true });
    expect(applyRunState(nb, running!)).toBe(true);
    expect(nb.list[2].executionState).toBe('running');

    const ended = tracker.parse(
      runEvent('cell', { cellIndex: 0, status: 'complete' })
    );
    expect(applyRunState(nb, ended!)).toBe(true);
    expect(nb.list[2].executionState).toBe('idle');
  });

  it('is idle when its run ends, whatever events were missed', () => {
    const tracker = new RunCellTracker();
    const nb = notebook();
    tracker.parse(
      runEvent('started', {
        cells: [
          { index: 0, cellId: 'a' },
          { index: 1, cellId: null }
        ]
      })
    );
    applyRunState(
      nb,
      tracker.parse(runEvent('cell', { cellIndex: 0, status: 'running' }))!
    );
    // A cell without an id (before nbformat 4.5) is not followed.
    expect(
      tracker.parse(runEvent('cell', { cellIndex: 1, status: 'running' }))
    ).toBeNull();

    const finished = tracker.parse(runEvent('finished', { result: {} }));
    expect(finished).toEqual({
      path: 'a.ipynb',
      cellIds: ['a'],
      running: false
    });
    applyRunState(nb, finished!);
    expect(nb.list[0].executionState).toBe('idle');
    // Forgotten once finished.
    expect(
      tracker.parse(runEvent('cell', { cellIndex: 0, status: 'running' }))
    ).toBeNull();
  });

  it('never ends a run the person started in another cell', () => {
    const nb = notebook();
    nb.list[0].executionState = 'running';
    expect(
      applyRunState(nb, { path: 'a.ipynb', cellIds: ['c'], running: false })
    ).toBe(false);
    expect(nb.list[0].executionState).toBe('running');
    expect(nb.list[2].executionState).toBe('idle');
  });
});

describe('run events in the activity panel', () => {
  it('show a run as a call on its notebook, skipped cells included', () => {
    const model = new ActivityModel();
    const base = { schema_id: RUN_SCHEMA_ID, callId: 'r1', path: 'a.ipynb' };
    model.handleEmission({
      ...base,
      event: 'started',
      cells: [
        { index: 0, title: 'cell 0', code: 'print(1)', cellId: 'a' },
        { index: 1, title: 'cell 1', code: '# b', cellId: 'b' }
      ]
    });
    model.handleEmission({
      ...base,
      event: 'cell',
      cellIndex: 1,
      status: 'skipped'
    });
    model.handleEmission(outputsEmission());

    const call = model.get('r1');
    expect(call?.kind).toBe('python');
    if (call?.kind === 'python') {
      expect(call.path).toBe('a.ipynb');
      expect(call.cells.map(c => c.status)).toEqual(['pending', 'skipped']);
    }
    expect(parseEmission(outputsEmission())).toBeNull();
  });
});

describe('runNotebook', () => {
  it('posts the run and returns its result', async () => {
    const result = { text: 'hi', callId: 'c'.repeat(32) } as IRunResult;
    const fetch = jest.fn().mockResolvedValueOnce(
      new Response(JSON.stringify(result), {
        status: 200,
        headers: { 'Content-Type': 'application/json' }
      })
    );
    const settings = ServerConnection.makeSettings({
      baseUrl: 'http://localhost:8888/lab/',
      fetch: fetch as unknown as typeof window.fetch
    });

    const answer = await runNotebook(
      { notebook_path: 'a.ipynb', all: true },
      settings
    );

    expect(answer).toEqual(result);
    const request = fetch.mock.calls[0][0] as Request;
    expect(request.method).toBe('POST');
    expect(request.url.replace(/[?&]\d+$/, '')).toBe(
      'http://localhost:8888/lab/api/xcsh/notebook/run'
    );
    expect(await request.json()).toEqual({
      notebook_path: 'a.ipynb',
      all: true
    });
  });

  it('interrupts one call by its id', async () => {
    const fetch = jest
      .fn()
      .mockResolvedValueOnce(
        new Response('{"interrupted": true}', { status: 200 })
      );
    const settings = ServerConnection.makeSettings({
      baseUrl: 'http://localhost:8888/',
      fetch: fetch as unknown as typeof window.fetch
    });

    await interruptCall('abc', settings);

    const request = fetch.mock.calls[0][0] as Request;
    expect(request.method).toBe('POST');
    expect(request.url.replace(/[?&]\d+$/, '')).toBe(
      'http://localhost:8888/api/xcsh/calls/abc/interrupt'
    );
  });
});

describe('showAgentRunning', () => {
  function cellWidget(id: string) {
    const node = document.createElement('div');
    return {
      model: { id },
      node,
      toggleClass: (name: string, on: boolean) =>
        node.classList.toggle(name, on)
    };
  }

  it('labels the cells of the run while they run, and only those', () => {
    const a = cellWidget('a');
    const b = cellWidget('b');
    const panel = { content: { widgets: [a, b] } } as never;
    showAgentRunning(panel, { path: 'n.ipynb', cellIds: ['a'], running: true });
    expect(a.node.classList.contains(AGENT_RUNNING_CLASS)).toBe(true);
    expect(a.node.dataset.xcshAgentRunning).toBe('Agent running');
    expect(b.node.classList.contains(AGENT_RUNNING_CLASS)).toBe(false);

    showAgentRunning(panel, {
      path: 'n.ipynb',
      cellIds: ['a'],
      running: false
    });
    expect(a.node.classList.contains(AGENT_RUNNING_CLASS)).toBe(false);
    expect(a.node.dataset.xcshAgentRunning).toBeUndefined();
  });
});
