/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { Context } from '@jupyterlab/docregistry';
import { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';
import { NBTestUtils } from '@jupyterlab/notebook/lib/testutils';
import { Widget } from '@lumino/widgets';

import {
  CellMarks,
  markForNotebookCall,
  marksForNotebookCall,
  markTitle
} from '../marks/model';
import { MARKED_CELL_CLASS, NotebookMarks } from '../marks/notebookmarks';
import { NOTEBOOK_SCHEMA_ID, parseEmission } from '../core/events';
import type { ICellMark } from '../tokens';

function emission(fields: Record<string, unknown> = {}) {
  return {
    schema_id: NOTEBOOK_SCHEMA_ID,
    callId: '3f2a9c1e00000000000000000000beef',
    __timestamp__: '2024-05-01T10:00:00.000Z',
    action: 'edit',
    path: 'a.ipynb',
    status: 'ok',
    cellIndex: 1,
    cellId: 'c1',
    cellType: 'code',
    source: 'x = 2',
    ...fields
  };
}

function mark(fields: Partial<ICellMark> = {}): ICellMark {
  return {
    path: 'a.ipynb',
    cellId: 'c1',
    cellIndex: 1,
    action: 'edit',
    callId: 'call-1',
    time: 0,
    source: 'x = 2',
    ...fields
  };
}

describe('markForNotebookCall', () => {
  function markOf(fields: Record<string, unknown>) {
    const event = parseEmission(emission(fields));
    return event?.kind === 'notebook' ? markForNotebookCall(event) : null;
  }

  it('marks the cell an edit left, with its source', () => {
    expect(markOf({})).toEqual({
      path: 'a.ipynb',
      cellId: 'c1',
      cellIndex: 1,
      action: 'edit',
      callId: '3f2a9c1e00000000000000000000beef',
      time: Date.parse('2024-05-01T10:00:00.000Z'),
      source: 'x = 2'
    });
  });

  it('marks inserts, moves and restored cells', () => {
    expect(markOf({ action: 'insert' })?.action).toBe('insert');
    expect(markOf({ action: 'move', fromIndex: 0 })?.action).toBe('move');
    expect(markOf({ restored: true })?.action).toBe('restore');
  });

  it.each([
    ['a delete', { action: 'delete' }],
    ['a read', { action: 'read' }],
    ['a failed call', { status: 'error' }],
    ['a move that stayed', { action: 'move', fromIndex: 1 }]
  ])('leaves no mark for %s', (_, fields) => {
    expect(markOf(fields)).toBeNull();
  });

  it('says which action, when and which call on hover', () => {
    const title = markTitle(markOf({})!);
    expect(title).toContain('An agent edited this cell at ');
    expect(title).toContain(
      new Date(Date.parse('2024-05-01T10:00:00.000Z')).toLocaleTimeString()
    );
    expect(title).toContain('(call 3f2a9c1e)');
  });
});

describe('marksForNotebookCall', () => {
  function marksOf(fields: Record<string, unknown>) {
    const event = parseEmission(emission(fields));
    return event?.kind === 'notebook' ? marksForNotebookCall(event) : [];
  }

  it('marks each cell a batch left, with the source of its last change', () => {
    const marks = marksOf({
      action: 'batch',
      cellIndex: null,
      cellId: null,
      source: null,
      changes: [
        { action: 'edit', cellIndex: 1, cellId: 'c1', source: 'x = 10' },
        { action: 'insert', cellIndex: 2, cellId: 'new', source: '## x' },
        { action: 'edit', cellIndex: 1, cellId: 'c1', source: 'x = 100' },
        { action: 'insert', cellIndex: 3, cellId: 'gone', source: 'tmp' },
        {
          action: 'delete',
          cellIndex: 3,
          previousCell: { cell_type: 'code', id: 'gone' }
        },
        { action: 'insert', cellIndex: 3, cellId: 'big', source: 'x' },
        {
          action: 'delete',
          cellIndex: 3,
          cellId: 'big',
          previousCellArtifactId: '20250101T120000-0123456789ab'
        },
        {
          action: 'move',
          cellIndex: 0,
          fromIndex: 0,
          cellId: 'c0',
          source: 'a'
        }
      ]
    });
    expect(marks.map(m => [m.cellId, m.cellIndex, m.action, m.source])).toEqual(
      [
        ['new', 2, 'insert', '## x'],
        ['c1', 1, 'edit', 'x = 100']
      ]
    );
    expect(new Set(marks.map(m => m.callId))).toEqual(
      new Set(['3f2a9c1e00000000000000000000beef'])
    );
  });

  it('marks nothing for a failed batch, and one cell for a single change', () => {
    expect(
      marksOf({ action: 'batch', status: 'error', error: 'Change 2 failed: x' })
    ).toEqual([]);
    expect(marksOf({}).map(m => m.cellId)).toEqual(['c1']);
  });
});

describe('CellMarks', () => {
  it('shows a mark once the cell holds what the agent left', () => {
    const marks = new CellMarks();
    const m = mark();
    marks.add(m);

    expect(marks.observe(m, 'x = 1')).toBe('pending');
    expect(marks.observe(m, 'x = 2')).toBe('shown');
    expect(marks.marksOf('a.ipynb')).toEqual([m]);
  });

  it('drops the mark when a person edits the cell', () => {
    const marks = new CellMarks();
    const changed = jest.fn();
    marks.changed.connect((_, path) => changed(path));
    const m = mark();
    marks.add(m);
    marks.observe(m, 'x = 2');

    expect(marks.observe(m, 'x = 2 # mine')).toBe('edited');
    expect(marks.marksOf('a.ipynb')).toEqual([]);
    expect(changed).toHaveBeenLastCalledWith('a.ipynb');
  });

  it('keeps an index mark when another cell takes its index', () => {
    const marks = new CellMarks();
    const m = mark({ cellId: null });
    marks.add(m);
    marks.observe(m, 'x = 2');

    expect(marks.observe(m, 'other')).toBe('pending');
    expect(marks.observe(m, 'x = 2')).toBe('shown');
  });

  it('takes the source of a run when it first sees the cell', () => {
    const marks = new CellMarks();
    const m = mark({ action: 'run', source: null });
    marks.add(m);

    expect(marks.observe(m, 'print(1)')).toBe('shown');
    expect(marks.observe(m, 'print(2)')).toBe('edited');
  });

  it('keeps the newest mark of a cell', () => {
    const marks = new CellMarks();
    marks.add(mark());
    const newer = mark({ callId: 'call-2', source: 'x = 3' });
    marks.add(newer);

    expect(marks.marksOf('a.ipynb')).toEqual([newer]);
  });

  it('removes the mark a call left on one cell, and the marks of a call', () => {
    const marks = new CellMarks();
    const a = mark();
    const b = mark({ cellId: 'c2' });
    const c = mark({ cellId: 'c3', callId: 'call-2', path: 'b.ipynb' });
    marks.add(a);
    marks.add(b);
    marks.add(c);

    marks.removeCell('a.ipynb', 'c1', 'call-1');
    expect(marks.marksOf('a.ipynb')).toEqual([b]);
    marks.removeCall('call-2');
    expect(marks.marksOf('b.ipynb')).toEqual([]);
  });

  it('never marks for an ignored call (a revert)', () => {
    const marks = new CellMarks();
    marks.add(mark({ callId: 'revert-1' }));
    marks.ignoreCall('revert-1');
    marks.add(mark({ callId: 'revert-1' }));

    expect(marks.marksOf('a.ipynb')).toEqual([]);
  });

  it('keeps at most its bound of marks per notebook, dropping the oldest', () => {
    const marks = new CellMarks({ maxPerNotebook: 2 });
    for (const id of ['a', 'b', 'c']) {
      marks.add(mark({ cellId: id }));
    }
    expect(marks.marksOf('a.ipynb').map(m => m.cellId)).toEqual(['b', 'c']);
  });

  it('is fed by raw event emissions', () => {
    const marks = new CellMarks();
    marks.handleEmission(emission());
    marks.handleEmission({ schema_id: 'other' });
    marks.handleEmission(null);

    expect(marks.marksOf('a.ipynb').map(m => m.cellId)).toEqual(['c1']);
  });
});

describe('NotebookMarks', () => {
  let context: Context<INotebookModel>;
  let panel: NotebookPanel;
  let marks: CellMarks;
  let view: NotebookMarks;

  beforeEach(async () => {
    context = await NBTestUtils.createMockContext(false);
    panel = NBTestUtils.createNotebookPanel(context);
    panel.content.model!.sharedModel.insertCells(0, [
      { cell_type: 'code', id: 'c0', source: 'a = 1', metadata: {} } as any,
      { cell_type: 'code', id: 'c1', source: 'x = 2', metadata: {} } as any
    ]);
    Widget.attach(panel, document.body);
    marks = new CellMarks();
    view = new NotebookMarks(panel, marks);
  });

  afterEach(() => {
    view.dispose();
    panel.dispose();
    context.dispose();
  });

  const settle = () => new Promise(resolve => setTimeout(resolve, 0));
  const cell = (i: number) => panel.content.widgets[i];
  const markOf = (i: number) =>
    cell(i).node.querySelector<HTMLElement>('.jp-xcsh-CellMark');

  it('marks the changed cell through its widget, with the hover text', async () => {
    const m = mark({ path: context.path });
    marks.add(m);
    await settle();

    expect(cell(1).hasClass(MARKED_CELL_CLASS)).toBe(true);
    expect(markOf(1)?.getAttribute('aria-label')).toBe(markTitle(m));
    expect(cell(0).hasClass(MARKED_CELL_CLASS)).toBe(false);
    expect(markOf(0)).toBeNull();
  });

  it('clears the mark when the person types in the cell', async () => {
    marks.add(mark({ path: context.path }));
    await settle();

    cell(1).model.sharedModel.setSource('x = 2  # typed');
    await settle();

    expect(cell(1).hasClass(MARKED_CELL_CLASS)).toBe(false);
    expect(markOf(1)).toBeNull();
    expect(marks.marksOf(context.path)).toEqual([]);
  });

  it('is nothing to click: a click leaves it, and it sits in the input row', async () => {
    marks.add(mark({ path: context.path }));
    await settle();

    expect(markOf(1)!.tagName).not.toBe('BUTTON');
    markOf(1)!.click();
    await settle();

    expect(markOf(1)).not.toBeNull();
    expect(marks.marksOf(context.path)).toHaveLength(1);
    // Below a review header the cell may have above its input.
    expect(markOf(1)!.closest('.jp-Cell-inputWrapper')).not.toBeNull();
  });

  it('shows a mark once the agent change reaches the notebook', async () => {
    marks.add(mark({ path: context.path, cellId: 'new', source: 'agent' }));
    await settle();
    expect(panel.content.node.querySelector('.jp-xcsh-CellMark')).toBeNull();

    panel.content.model!.sharedModel.insertCell(2, {
      cell_type: 'code',
      id: 'new',
      source: 'agent',
      metadata: {}
    } as any);
    await settle();

    expect(cell(2).hasClass(MARKED_CELL_CLASS)).toBe(true);
  });

  it('leaves the marks of other notebooks alone', async () => {
    marks.add(mark({ path: 'other.ipynb' }));
    await settle();

    expect(panel.content.node.querySelector('.jp-xcsh-CellMark')).toBeNull();
  });
});
