/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { YNotebook } from '@jupyter/ydoc';

import {
  acknowledgeSave,
  applyChange,
  applyChanges,
  ICellChangeEvent,
  MAX_EVENT_SOURCE,
  parseCellChange,
  parseCellChanges,
  planSync
} from '../livesync';
import { NOTEBOOK_SCHEMA_ID } from '../core/events';

function emission(
  extra: Record<string, unknown> = {}
): Record<string, unknown> {
  return {
    schema_id: NOTEBOOK_SCHEMA_ID,
    callId: 'c1',
    action: 'insert',
    path: 'a.ipynb',
    status: 'ok',
    cellIndex: 1,
    cellId: 'new1',
    cellType: 'markdown',
    source: '# hi',
    lastModified: '2026-01-01T00:00:00Z',
    ...extra
  };
}

function notebook(): YNotebook {
  const nb = YNotebook.create();
  nb.insertCells(0, [
    { cell_type: 'code', id: 'a', source: 'x = 1', metadata: {} } as any,
    {
      cell_type: 'markdown',
      id: 'b',
      source: '# b',
      metadata: { tag: 1 }
    } as any,
    { cell_type: 'raw', id: 'c', source: 'raw', metadata: {} } as any
  ]);
  return nb;
}

function change(extra: Partial<ICellChangeEvent>): ICellChangeEvent {
  return parseCellChange(emission(extra as Record<string, unknown>))!;
}

describe('parseCellChange', () => {
  it('reads a successful change', () => {
    expect(parseCellChange(emission())).toEqual({
      action: 'insert',
      path: 'a.ipynb',
      cellIndex: 1,
      fromIndex: null,
      cellId: 'new1',
      cellType: 'markdown',
      source: '# hi',
      lastModified: '2026-01-01T00:00:00Z',
      restored: false,
      partial: false
    });
  });

  it('says when the event has not the whole new source', () => {
    const cut = 'x'.repeat(MAX_EVENT_SOURCE);
    expect(parseCellChange(emission({ source: cut }))?.partial).toBe(true);
    expect(parseCellChange(emission({ source: null }))).toMatchObject({
      source: '',
      partial: true
    });
  });

  it.each([
    ['another schema', { schema_id: 'https://example.org/x' }],
    ['a failed call', { status: 'error' }],
    ['a read', { action: 'read' }],
    ['no path', { path: 42 }],
    ['a negative index', { cellIndex: -1 }],
    ['a fractional index', { cellIndex: 1.5 }]
  ])('ignores %s', (_, extra) => {
    expect(parseCellChange(emission(extra))).toBeNull();
  });

  it.each([null, undefined, 42, 'text', []])('ignores %p', raw => {
    expect(parseCellChange(raw)).toBeNull();
  });

  it('tolerates junk in optional fields', () => {
    const parsed = parseCellChange(
      emission({ cellId: 3, cellType: 'weird', source: {}, lastModified: 1 })
    );
    expect(parsed).toMatchObject({
      cellId: null,
      cellType: 'code',
      source: '',
      lastModified: null
    });
  });
});

describe('planSync', () => {
  it('applies to every notebook but a collaborative one', () => {
    expect(planSync({ collaborative: false })).toBe('apply');
    expect(planSync({ collaborative: true })).toBe('skip');
  });
});

describe('applyChange', () => {
  it('inserts at the index with the id the server gave', () => {
    const nb = notebook();
    expect(applyChange(nb, change({}))).toBe(true);
    expect(nb.cells.map(c => c.getId())).toEqual(['a', 'new1', 'b', 'c']);
    expect(nb.cells[1].getSource()).toBe('# hi');
    expect(nb.cells[1].cell_type).toBe('markdown');
  });

  it('puts a whole restored cell back with its outputs and metadata', () => {
    const nb = notebook();
    const whole = {
      cell_type: 'code',
      id: 'back',
      source: 'print(7)',
      metadata: { tags: ['keep'] },
      execution_count: 7,
      outputs: [{ output_type: 'stream', name: 'stdout', text: '7\n' }]
    };
    applyChange(
      nb,
      change({ cellId: 'back', cellType: 'code', restored: true }),
      whole
    );
    expect(nb.cells[1].toJSON()).toEqual(whole);
  });

  it('replaces an edited cell with the whole cell a revert wrote', () => {
    const nb = notebook();
    const whole = {
      cell_type: 'code',
      id: 'b',
      source: 'back = 1',
      metadata: { tag: 2 },
      execution_count: 4,
      outputs: []
    };
    applyChange(
      nb,
      change({ action: 'edit', cellId: 'b', restored: true }),
      whole
    );
    expect(nb.cells.length).toBe(3);
    expect(nb.cells[1].toJSON()).toEqual(whole);
  });

  it('does not insert the same cell twice', () => {
    const nb = notebook();
    applyChange(nb, change({}));
    applyChange(nb, change({}));
    expect(nb.cells.length).toBe(4);
  });

  it('edits by id even when local indexes moved', () => {
    const nb = notebook();
    nb.insertCell(0, {
      cell_type: 'code',
      id: 'human',
      source: 'typed'
    } as any);
    applyChange(
      nb,
      change({ action: 'edit', cellId: 'b', cellIndex: 1, source: 'new b' })
    );
    expect(nb.cells[2].getSource()).toBe('new b');
    expect(nb.cells[0].getSource()).toBe('typed');
  });

  it('converts a cell type keeping id and metadata', () => {
    const nb = notebook();
    applyChange(
      nb,
      change({
        action: 'edit',
        cellId: 'b',
        cellIndex: 1,
        cellType: 'code',
        source: '1'
      })
    );
    expect(nb.cells[1].cell_type).toBe('code');
    expect(nb.cells[1].getId()).toBe('b');
    expect(nb.cells[1].getMetadata()).toEqual({ tag: 1 });
    expect(nb.cells.length).toBe(3);
  });

  it('deletes and moves by id', () => {
    const nb = notebook();
    applyChange(nb, change({ action: 'delete', cellId: 'a', cellIndex: 0 }));
    expect(nb.cells.map(c => c.getId())).toEqual(['b', 'c']);
    applyChange(
      nb,
      change({ action: 'move', cellId: 'c', fromIndex: 1, cellIndex: 0 })
    );
    expect(nb.cells.map(c => c.getId())).toEqual(['c', 'b']);
  });

  it('reports a change it cannot place', () => {
    const nb = notebook();
    expect(
      applyChange(nb, change({ action: 'delete', cellId: 'zz', cellIndex: 9 }))
    ).toBe(false);
    expect(nb.cells.length).toBe(3);
  });
});

describe('a batch', () => {
  const batch = emission({
    action: 'batch',
    cellIndex: null,
    cellId: null,
    cellType: null,
    source: null,
    changes: [
      {
        action: 'edit',
        cellIndex: 0,
        cellId: 'a',
        cellType: 'code',
        source: 'x = 10'
      },
      {
        action: 'insert',
        cellIndex: 1,
        cellId: 'n',
        cellType: 'markdown',
        source: '## x'
      },
      {
        action: 'move',
        cellIndex: 0,
        fromIndex: 3,
        cellId: 'c',
        cellType: 'raw'
      },
      { action: 'delete', cellIndex: 3, cellId: 'b', cellType: 'markdown' }
    ]
  });

  it("is read as its changes in order, with the batch's path and time", () => {
    const changes = parseCellChanges(batch)!;
    expect(changes.map(c => [c.action, c.cellId, c.cellIndex])).toEqual([
      ['edit', 'a', 0],
      ['insert', 'n', 1],
      ['move', 'c', 0],
      ['delete', 'b', 3]
    ]);
    expect(new Set(changes.map(c => c.path))).toEqual(new Set(['a.ipynb']));
    expect(changes[0].lastModified).toBe('2026-01-01T00:00:00Z');
    expect(parseCellChanges(emission())).toEqual([parseCellChange(emission())]);
  });

  it('is not followed when it failed or a change lacks its cell', () => {
    expect(
      parseCellChanges({ ...batch, status: 'error', error: 'Change 2 failed' })
    ).toBeNull();
    expect(
      parseCellChanges({
        ...batch,
        changes: [{ action: 'edit', cellId: 'a', source: 'x' }]
      })
    ).toBeNull();
    expect(parseCellChanges({ ...batch, changes: [] })).toBeNull();
  });

  it('is applied to the model in order, each change after the previous one', () => {
    const nb = notebook();
    const steps = parseCellChanges(batch)!.map(
      c => [c, null] as [ICellChangeEvent, null]
    );

    expect(applyChanges(nb, steps)).toBeNull();

    expect(nb.cells.map(c => [c.getId(), c.getSource()])).toEqual([
      ['c', 'raw'],
      ['a', 'x = 10'],
      ['n', '## x']
    ]);
  });

  it('stops at a change it cannot place and says which', () => {
    const nb = notebook();
    const steps = parseCellChanges(batch)!.map(
      c => [c, null] as [ICellChangeEvent, null]
    );
    steps.splice(1, 0, [
      change({ action: 'delete', cellId: 'zz', cellIndex: 9 }),
      null
    ]);

    expect(applyChanges(nb, steps)?.cellId).toBe('zz');
    expect(nb.cells.map(c => c.getId())).toEqual(['a', 'b', 'c']);
  });
});

describe('acknowledgeSave', () => {
  // As JupyterLab 4's Context: the public getter returns a copy of the private field.
  const labContext = (model: object): any => ({
    _contentsModel: model,
    get contentsModel() {
      return { ...this._contentsModel };
    }
  });

  it('leaves a context whose model is not that field alone', () => {
    const model = { path: 'a.ipynb', last_modified: 'old', hash: 'h0' };
    const context = { contentsModel: model } as any;
    expect(acknowledgeSave(context, { last_modified: 'new' })).toBe(false);
    expect(context.contentsModel).toBe(model);
    expect(model.last_modified).toBe('old');
    expect('_contentsModel' in context).toBe(false);
  });

  it('replaces the known modification time and hash only', () => {
    const context = labContext({
      path: 'a.ipynb',
      last_modified: 'old',
      hash: 'h0'
    });
    expect(acknowledgeSave(context, { last_modified: 'new', hash: 'h1' })).toBe(
      true
    );
    expect(context._contentsModel).toEqual({
      path: 'a.ipynb',
      last_modified: 'new',
      hash: 'h1',
      hash_algorithm: undefined
    });
  });

  it('drops a stale hash when only the time is known', () => {
    const context = labContext({
      path: 'a.ipynb',
      last_modified: 'old',
      hash: 'h0',
      hash_algorithm: 'sha256'
    });
    acknowledgeSave(context, { last_modified: 'new', hash: undefined });
    expect(context._contentsModel.last_modified).toBe('new');
    expect(context._contentsModel.hash).toBeUndefined();
    expect(context._contentsModel.hash_algorithm).toBeUndefined();
  });

  it('keeps the hash when the key is absent', () => {
    const context = labContext({
      path: 'a.ipynb',
      last_modified: 'old',
      hash: 'h0'
    });
    acknowledgeSave(context, { last_modified: 'new' });
    expect(context._contentsModel.hash).toBe('h0');
  });
});
