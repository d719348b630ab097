/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { INotebookCell, INotebookEditResult } from '../client';
import { XcshResponseError } from '../request';
import {
  INotebookCallEvent,
  NOTEBOOK_SCHEMA_ID,
  parseEmission
} from '../core/events';
import { ActivityModel, INotebookCall } from '../core/activity';
import { canUndo } from '../core/undoable';
import {
  parseCellArtifact,
  refusalMessage,
  undoRequest,
  undoUnavailable,
  staleInOpenNotebook
} from '../review/undorequest';
import { GuardedUndoer } from '../review/undo';
import type { IXcshClient } from '../tokens';

const HASH = '0123456789abcdef';

const OLD_CELL: INotebookCell = {
  cell_type: 'code',
  execution_count: 3,
  id: 'c1',
  metadata: { tags: ['keep'] },
  outputs: [{ output_type: 'stream', name: 'stdout', text: '1\n' }],
  source: ['x = 1\n', 'print(x)']
};

function event(fields: Record<string, unknown> = {}): INotebookCallEvent {
  const parsed = parseEmission({
    schema_id: NOTEBOOK_SCHEMA_ID,
    callId: 'call-1',
    action: 'edit',
    path: 'dir/a.ipynb',
    status: 'ok',
    cellIndex: 1,
    cellId: 'c1',
    cellType: 'code',
    source: 'x = 2',
    sourceHash: HASH,
    previousCell: OLD_CELL,
    ...fields
  });
  if (parsed?.kind !== 'notebook') {
    throw new Error('not a notebook event');
  }
  return parsed;
}

describe('canUndo', () => {
  it.each([
    ['an edit', {}, true],
    ['an insert', { action: 'insert' }, true],
    ['a delete', { action: 'delete' }, true],
    ['a move', { action: 'move', fromIndex: 0 }, true],
    ['a move that stayed', { action: 'move', fromIndex: 1 }, false],
    ['a read', { action: 'read' }, false],
    ['a failed call', { status: 'error', error: 'nope' }, false],
    ['a call without a cell', { cellIndex: null }, false]
  ])('knows whether %s can be undone', (_, fields, expected) => {
    expect(canUndo(event(fields))).toBe(expected);
  });
});

describe('undoRequest', () => {
  it('writes the whole cell back over an edit, if the cell is as the edit left it', () => {
    expect(undoRequest(event(), OLD_CELL)).toEqual({
      action: 'edit',
      notebook_path: 'dir/a.ipynb',
      cell_id: 'c1',
      cell: OLD_CELL,
      expected_source_hash: HASH
    });
  });

  it('deletes an inserted cell, if it is as the insert left it', () => {
    expect(undoRequest(event({ action: 'insert' }), null)).toEqual({
      action: 'delete',
      notebook_path: 'dir/a.ipynb',
      cell_id: 'c1',
      expected_source_hash: HASH
    });
  });

  it('inserts a deleted cell whole at its index', () => {
    expect(undoRequest(event({ action: 'delete' }), OLD_CELL)).toEqual({
      action: 'insert',
      notebook_path: 'dir/a.ipynb',
      cell_index: 1,
      cell: OLD_CELL
    });
  });

  it('moves a moved cell back', () => {
    expect(
      undoRequest(event({ action: 'move', cellIndex: 3, fromIndex: 0 }), null)
    ).toEqual({
      action: 'move',
      notebook_path: 'dir/a.ipynb',
      cell_id: 'c1',
      to_index: 0,
      expected_source_hash: HASH
    });
  });

  it('addresses a cell by index in a notebook without ids', () => {
    expect(
      undoRequest(
        event({ action: 'move', cellId: null, cellIndex: 3, fromIndex: 0 }),
        null
      )
    ).toMatchObject({ cell_index: 3, to_index: 0 });
  });
});

describe('undoUnavailable', () => {
  it('is null for a change with everything an undo needs', () => {
    expect(undoUnavailable(event())).toBeNull();
  });

  it('says when the cell as it was is unknown', () => {
    expect(undoUnavailable(event({ previousCell: null }))).toBe(
      'The server did not keep the cell as it was before this call.'
    );
  });

  it('accepts a cell kept in an artifact', () => {
    expect(
      undoUnavailable(
        event({
          previousCell: null,
          previousCellArtifactId: '20250101T120000-0123456789ab'
        })
      )
    ).toBeNull();
  });

  it('refuses to undo without the hash that protects later changes', () => {
    expect(undoUnavailable(event({ sourceHash: null }))).toMatch(
      /could overwrite a later change/
    );
    // Putting a deleted cell back overwrites nothing.
    expect(
      undoUnavailable(event({ action: 'delete', sourceHash: null }))
    ).toBeNull();
  });
});

describe('staleInOpenNotebook', () => {
  const cells = [
    { id: 'c0', source: 'a = 1' },
    { id: 'c1', source: 'x = 2' }
  ];

  it('lets an undo through when the open cell is as the call left it', () => {
    expect(staleInOpenNotebook(event(), cells)).toBeNull();
  });

  it('refuses when the person changed the cell (unsaved)', () => {
    const typed = [cells[0], { id: 'c1', source: 'x = 2  # mine' }];
    expect(staleInOpenNotebook(event(), typed)).toBe(
      'the cell was changed in the open notebook after this call.'
    );
  });

  it('refuses when the person deleted the cell', () => {
    expect(staleInOpenNotebook(event(), [cells[0]])).toBe(
      'the cell was deleted in the open notebook after this call.'
    );
  });

  it('refuses to insert a deleted cell that is back already', () => {
    expect(
      staleInOpenNotebook(event({ action: 'delete' }), [
        { id: 'c1', source: 'x = 1\nprint(x)' }
      ])
    ).toBe('the cell is in the open notebook again.');
    expect(
      staleInOpenNotebook(event({ action: 'delete' }), cells.slice(0, 1))
    ).toBeNull();
  });

  it('compares a cut source by its beginning', () => {
    const long = 'y'.repeat(70000);
    const cut = event({ source: long.slice(0, 65536) });
    expect(
      staleInOpenNotebook(cut, [cells[0], { id: 'c1', source: long }])
    ).toBeNull();
    expect(
      staleInOpenNotebook(cut, [cells[0], { id: 'c1', source: 'z' + long }])
    ).not.toBeNull();
  });
});

describe('a batch', () => {
  const BIG_CELL_ID = '20250101T120000-0123456789ab';
  const changes = [
    {
      action: 'edit',
      cellIndex: 1,
      cellId: 'c1',
      source: 'x = 10',
      sourceHash: '1111111111111111',
      previousCell: OLD_CELL
    },
    {
      action: 'insert',
      cellIndex: 2,
      cellId: 'n1',
      source: '## About x',
      sourceHash: '2222222222222222'
    },
    { action: 'move', cellIndex: 0, fromIndex: 0, cellId: 'c0', source: 'a' },
    {
      action: 'move',
      cellIndex: 0,
      fromIndex: 3,
      cellId: 'c3',
      source: 'z = 3',
      sourceHash: '3333333333333333'
    },
    {
      action: 'delete',
      cellIndex: 3,
      cellId: 'c2',
      previousCellArtifactId: BIG_CELL_ID
    }
  ];
  const batch = (fields: Record<string, unknown> = {}) =>
    event({
      action: 'batch',
      cellIndex: null,
      cellId: null,
      source: null,
      sourceHash: null,
      previousCell: null,
      changes,
      ...fields
    });
  const BIG_CELL = { ...OLD_CELL, id: 'c2' };

  it('is undone by one batch: each change undone, last first', () => {
    expect(canUndo(batch())).toBe(true);
    expect(undoUnavailable(batch())).toBeNull();
    expect(
      undoRequest(batch(), [OLD_CELL, null, null, null, BIG_CELL])
    ).toEqual({
      notebook_path: 'dir/a.ipynb',
      changes: [
        { action: 'insert', cell_index: 3, cell: BIG_CELL },
        {
          action: 'move',
          cell_id: 'c3',
          to_index: 3,
          expected_source_hash: '3333333333333333'
        },
        {
          action: 'delete',
          cell_id: 'n1',
          expected_source_hash: '2222222222222222'
        },
        {
          action: 'edit',
          cell_id: 'c1',
          cell: OLD_CELL,
          expected_source_hash: '1111111111111111'
        }
      ]
    });
  });

  it("cannot be undone when it failed, changed nothing, or lacks a change's cell", () => {
    expect(canUndo(batch({ status: 'error', error: 'Change 2 failed' }))).toBe(
      false
    );
    expect(canUndo(batch({ changes: [changes[2]] }))).toBe(false);
    expect(
      undoUnavailable(
        batch({
          changes: [changes[1], { ...changes[4], previousCellArtifactId: null }]
        })
      )
    ).toBe(
      'Change 2: The server did not keep the cell as it was before this call.'
    );
  });

  it('is refused when the open notebook has unsaved changes to a cell it left', () => {
    const cells = [
      { id: 'c3', source: 'z = 3' },
      { id: 'c0', source: 'a' },
      { id: 'c1', source: 'x = 10' },
      { id: 'n1', source: '## About x' }
    ];
    expect(staleInOpenNotebook(batch(), cells)).toBeNull();
    const typed = cells.map(c =>
      c.id === 'n1' ? { ...c, source: '## x!' } : c
    );
    expect(staleInOpenNotebook(batch(), typed)).toBe(
      'the cell was changed in the open notebook after this call.'
    );
    const back = [...cells, { id: 'c2', source: 'y = 2' }];
    expect(staleInOpenNotebook(batch(), back)).toBe(
      'the cell is in the open notebook again.'
    );
  });

  it('fetches each kept cell and sends the undo batch', async () => {
    const model = modelWith({
      action: 'batch',
      cellIndex: null,
      cellId: null,
      source: null,
      sourceHash: null,
      previousCell: null,
      changes
    });
    const client = fakeClient(() => Promise.resolve(undone));
    client.getArtifact.mockResolvedValueOnce(JSON.stringify(BIG_CELL));

    const outcome = await guardedUndo(model, client);

    expect(client.getArtifact).toHaveBeenCalledWith(BIG_CELL_ID);
    expect(client.notebook).toHaveBeenCalledWith(
      undoRequest(call(model).event, [OLD_CELL, null, null, null, BIG_CELL])
    );
    expect(outcome).toEqual({ state: 'done', by: 'undo-1' });
  });
});

describe('parseCellArtifact', () => {
  it('reads a kept cell', () => {
    expect(parseCellArtifact(JSON.stringify(OLD_CELL))).toEqual(OLD_CELL);
  });

  it.each(['', 'not json', '[1]', '{"source": "x"}'])('refuses %p', text => {
    expect(parseCellArtifact(text)).toBeNull();
  });
});

describe('refusalMessage', () => {
  it('says why in words for each reason', () => {
    expect(refusalMessage('stale_cell')).toBe(
      'Not undone: the cell was changed after this call.'
    );
    expect(refusalMessage('stale_notebook')).toMatch(/notebook was changed/);
    expect(refusalMessage('cell_exists')).toMatch(/in the notebook again/);
    expect(refusalMessage(null)).toMatch(/^Not undone/);
  });
});

/**
 * A client double whose `notebook` answers with `answer`.
 */
function fakeClient(answer: () => Promise<unknown>) {
  return {
    notebook: jest.fn(answer),
    getArtifact: jest.fn(() => Promise.resolve(JSON.stringify(OLD_CELL)))
  } as unknown as IXcshClient & {
    notebook: jest.Mock;
    getArtifact: jest.Mock;
  };
}

function modelWith(fields: Record<string, unknown> = {}) {
  const model = new ActivityModel();
  model.handleEmission({
    schema_id: NOTEBOOK_SCHEMA_ID,
    callId: 'call-1',
    action: 'edit',
    path: 'dir/a.ipynb',
    status: 'ok',
    cellIndex: 1,
    cellId: 'c1',
    cellType: 'code',
    source: 'x = 2',
    sourceHash: HASH,
    previousCell: OLD_CELL,
    ...fields
  });
  return model;
}

const call = (model: ActivityModel) => model.get('call-1') as INotebookCall;

const undone: INotebookEditResult = {
  callId: 'undo-1',
  text: 'Replaced cell 1 (code). Notebook now has 2 cells.',
  details: {
    action: 'edit',
    cellIndex: 1,
    cellType: 'code',
    totalCells: 2,
    cellSource: ['x = 1\n', 'print(x)'],
    cellId: 'c1',
    sourceHash: '1111111111111111',
    revision: '2222222222222222',
    via: 'file'
  }
};

/**
 * Undo the call `call-1` of `model` with the guarded undo.
 */
function guardedUndo(
  model: ActivityModel,
  client: IXcshClient,
  openCells: (path: string) => { id: string; source: string }[] | null = () =>
    null,
  followed?: (callId: string) => Promise<void>
) {
  return new GuardedUndoer(client, openCells, undefined, followed).undo({
    path: 'dir/a.ipynb',
    callId: 'call-1',
    cellId: null,
    event: call(model).event
  });
}

describe('GuardedUndoer', () => {
  it('undoes through the notebook tool and says which call undid it', async () => {
    const model = modelWith();
    const client = fakeClient(() => Promise.resolve(undone));

    const outcome = await guardedUndo(model, client);

    expect(client.notebook).toHaveBeenCalledWith(
      undoRequest(call(model).event, OLD_CELL)
    );
    expect(outcome).toEqual({ state: 'done', by: 'undo-1' });
  });

  it('waits until the open notebook shows its undo (the next undo checks it)', async () => {
    const model = modelWith();
    const client = fakeClient(() => Promise.resolve(undone));
    const followed = jest.fn(() => Promise.resolve());
    const open = () => [
      { id: 'c0', source: '' },
      { id: 'c1', source: 'x = 2' }
    ];

    await guardedUndo(model, client, open, followed);
    expect(followed.mock.calls).toEqual([['undo-1']]);

    followed.mockClear();
    await guardedUndo(model, client, () => null, followed);
    expect(followed).not.toHaveBeenCalled();
  });

  it('labels the undo call when its event arrives after the answer', () => {
    const model = modelWith();
    model.linkUndo('undo-1', 'call-1');

    model.handleEmission({
      schema_id: NOTEBOOK_SCHEMA_ID,
      callId: 'undo-1',
      action: 'edit',
      path: 'dir/a.ipynb',
      status: 'ok',
      restored: true
    });

    expect((model.get('undo-1') as INotebookCall).undoOf).toBe('call-1');
  });

  it('says why the server refused (409) and changes nothing else', async () => {
    const model = modelWith();
    const response = new Response('', { status: 409 });
    const client = fakeClient(() =>
      Promise.reject(
        new XcshResponseError(
          response,
          'Cell 1 changed since it was read (expected source hash a, found b) in dir/a.ipynb',
          'stale_cell'
        )
      )
    );

    expect(await guardedUndo(model, client)).toEqual({
      state: 'refused',
      message: 'Not undone: the cell was changed after this call.',
      detail:
        'Cell 1 changed since it was read (expected source hash a, found b) in dir/a.ipynb'
    });
  });

  it('refuses without asking the server when the open notebook has unsaved changes to the cell', async () => {
    const model = modelWith();
    const client = fakeClient(() => Promise.resolve(undone));

    const outcome = await guardedUndo(model, client, path =>
      path === 'dir/a.ipynb'
        ? [
            { id: 'c0', source: '' },
            { id: 'c1', source: 'x = 2 # typed' }
          ]
        : null
    );

    expect(client.notebook).not.toHaveBeenCalled();
    expect(outcome).toEqual({
      state: 'refused',
      message:
        'Not undone: the cell was changed in the open notebook after this call.' +
        ' Keep the change, or undo your own edit first.'
    });
  });

  it('fetches a cell too large for the event from its artifact', async () => {
    const model = modelWith({
      action: 'delete',
      previousCell: null,
      previousCellArtifactId: '20250101T120000-0123456789ab'
    });
    const client = fakeClient(() => Promise.resolve(undone));

    await guardedUndo(model, client);

    expect(client.getArtifact).toHaveBeenCalledWith(
      '20250101T120000-0123456789ab'
    );
    expect(client.notebook).toHaveBeenCalledWith({
      action: 'insert',
      notebook_path: 'dir/a.ipynb',
      cell_index: 1,
      cell: OLD_CELL
    });
  });

  it('reports any other failure as a failure', async () => {
    const model = modelWith();
    const client = fakeClient(() => Promise.reject(new Error('offline')));

    expect(await guardedUndo(model, client)).toEqual({
      state: 'failed',
      message: 'Undo failed: offline'
    });
  });
});
