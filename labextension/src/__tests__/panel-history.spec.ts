/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { IActivityPage, IActivityQuery } from '../client';
import { CellMarks } from '../marks/model';
import { NOTEBOOK_SCHEMA_ID, PYTHON_SCHEMA_ID } from '../core/events';
import { ActivityChange, ActivityModel } from '../core/activity';
import { loadHistory } from '../panel/history';

function notebook(callId: string, time: string, source = 'x = 1') {
  return {
    schema_id: NOTEBOOK_SCHEMA_ID,
    __timestamp__: time,
    callId,
    action: 'insert',
    path: 'a.ipynb',
    status: 'ok',
    cellIndex: 0,
    cellType: 'code',
    source
  };
}

function python(callId: string, time: string, fields: Record<string, unknown>) {
  return {
    schema_id: PYTHON_SCHEMA_ID,
    __timestamp__: time,
    callId,
    session: 'default',
    ...fields
  };
}

/** A history entry as `GET /api/xcsh/activity` answers it. */
function entry(id: number, callId: string, events: unknown[]) {
  const kind = (events[0] as { schema_id: string }).schema_id.includes(
    'notebook'
  )
    ? ('notebook' as const)
    : ('python' as const);
  return {
    id,
    callId,
    kind,
    path: kind === 'notebook' ? 'a.ipynb' : null,
    time: '2026-01-01T00:00:00.000+00:00',
    events: events as IActivityPage['entries'][number]['events']
  };
}

const T1 = '2026-01-01T10:00:00.000+00:00';
const T2 = '2026-01-01T10:01:00.000+00:00';
const T3 = '2026-01-01T10:02:00.000+00:00';

function page(): IActivityPage {
  return {
    entries: [
      entry(1, 'old-edit', [notebook('old-edit', T1, 'kept = 1')]),
      entry(2, 'old-run', [
        python('old-run', T2, {
          event: 'started',
          cells: [{ index: 0, title: 'step 1', code: 'print(2)' }]
        }),
        python('old-run', T2, { event: 'chunk', cellIndex: 0, text: '2\n' }),
        python('old-run', T2, {
          event: 'cell',
          cellIndex: 0,
          status: 'complete'
        }),
        python('old-run', T2, {
          event: 'finished',
          result: { text: '2\n', isError: false, cells: [] }
        })
      ]),
      entry(3, 'live', [notebook('live', T3, 'from the history')])
    ],
    cursor: 3,
    more: false
  };
}

describe('loading the activity history', () => {
  it('restores the calls, oldest under the live ones, without doubles', async () => {
    const model = new ActivityModel();
    // A call that arrived live before the history did, and also in the history.
    model.handleEmission(notebook('live', T3, 'live version'));
    const changes: ActivityChange[] = [];
    model.changed.connect((_, change) => changes.push(change));
    const queries: IActivityQuery[] = [];
    const added = await loadHistory(model, {
      activityHistory: async query => {
        queries.push(query ?? {});
        return page();
      }
    });
    expect(added).toBe(2);
    expect(queries).toEqual([{ limit: ActivityModel.MAX_CALLS }]);
    expect(model.calls.map(call => call.id)).toEqual([
      'live',
      'old-run',
      'old-edit'
    ]);
    // The live call stays as it arrived.
    const live = model.get('live');
    expect(live?.kind === 'notebook' && live.event.source).toBe('live version');
    // A restored notebook call carries what the panel shows and a revert needs.
    const edit = model.get('old-edit');
    expect(edit?.kind === 'notebook' && edit.event.source).toBe('kept = 1');
    const run = model.get('old-run');
    expect(run?.kind).toBe('python');
    expect(run?.kind === 'python' && run.status).not.toBe('running');
    expect(run?.kind === 'python' && run.cells[0].code).toBe('print(2)');
    // Restored calls are not new activity (no unread badge).
    expect(changes).toEqual([
      { type: 'added', id: 'old-edit', restored: true },
      { type: 'added', id: 'old-run', restored: true }
    ]);
  });

  it("lists the person's own undo as theirs, never as an agent's call", async () => {
    const model = new ActivityModel();
    const history = page();
    history.entries[0] = {
      ...history.entries[0],
      review: [{ cellId: null, state: 'yours' }]
    };
    await loadHistory(model, { activityHistory: async () => history });
    const undo = model.get('old-edit');
    expect(undo?.kind === 'notebook' && undo.undoOf).toBe('');
    const live = model.get('live');
    expect(live?.kind === 'notebook' && live.undoOf).toBeNull();
  });

  it('adds nothing twice when loaded again', async () => {
    const model = new ActivityModel();
    const client = { activityHistory: async () => page() };
    expect(await loadHistory(model, client)).toBe(3);
    expect(await loadHistory(model, client)).toBe(0);
    expect(model.calls).toHaveLength(3);
  });

  it('keeps the panel as it is when the history is off or malformed', async () => {
    const model = new ActivityModel();
    model.handleEmission(notebook('live', T3));
    const off = Object.assign(new Error('off'), {
      response: { status: 404 }
    });
    expect(
      await loadHistory(model, {
        activityHistory: () => Promise.reject(off)
      })
    ).toBe(0);
    const odd = {
      entries: [
        null,
        { callId: 7, events: [] },
        { callId: 'x', events: 'no' },
        // An entry's events cannot make another call.
        { callId: 'y', events: [notebook('z', T1)] },
        { callId: 'w', events: [{ schema_id: 'other' }] }
      ],
      cursor: 0,
      more: false
    } as unknown as IActivityPage;
    expect(await loadHistory(model, { activityHistory: async () => odd })).toBe(
      0
    );
    expect(model.calls.map(call => call.id)).toEqual(['live']);
  });

  it('restores the marks of cells that still hold what the agent left', async () => {
    const withIds = (
      callId: string,
      cellId: string | null,
      source: string
    ) => ({
      ...notebook(callId, T1, source),
      cellId
    });
    const history: IActivityPage = {
      entries: [
        entry(1, 'c1', [withIds('c1', 'cell-1', 'agent one')]),
        entry(2, 'c2', [withIds('c2', 'cell-2', 'agent two')]),
        entry(3, 'c3', [withIds('c3', null, 'by index')]),
        entry(4, 'c4', [withIds('c4', 'cell-4', 'old agent text')])
      ],
      cursor: 4,
      more: false
    };
    const marks = new CellMarks();
    // A mark made live on this page wins over the history's for its cell.
    marks.handleEmission(withIds('live', 'cell-4', 'live agent text'));
    await loadHistory(
      new ActivityModel(),
      { activityHistory: async () => history },
      marks
    );
    const byCell = new Map(
      marks.marksOf('a.ipynb').map(mark => [mark.cellId, mark])
    );
    expect([...byCell.keys()].sort()).toEqual(['cell-1', 'cell-2', 'cell-4']);
    expect(byCell.get('cell-4')?.callId).toBe('live');
    // The cell still holds the agent's source: the mark shows.
    expect(marks.observe(byCell.get('cell-1')!, 'agent one')).toBe('shown');
    // A person changed the cell before the reload: the mark ends at once.
    expect(marks.observe(byCell.get('cell-2')!, 'typed by a person')).toBe(
      'edited'
    );
    expect(marks.marksOf('a.ipynb').map(mark => mark.cellId)).not.toContain(
      'cell-2'
    );
  });
});
