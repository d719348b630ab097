/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { ReviewController } from '../review/controller';
import { changedCells, changesOfCall, ReviewModel } from '../review/model';
import { NotebookReview } from '../review/notebookreview';
import {
  ChainedUndoer,
  type IUndoer,
  type IUndoTarget,
  type UndoOutcome
} from '../review/undo';
import { parseEmission, type INotebookCallEvent } from '../core/events';
import { UNTRANSLATED } from '../translation';
import { notebookEditEmission, openNotebook, waitFor } from './helpers';

function event(
  callId: string,
  fields: Record<string, unknown> = {}
): INotebookCallEvent {
  const parsed = parseEmission(notebookEditEmission(callId, fields));
  if (parsed?.kind !== 'notebook') {
    throw new Error('not a notebook event');
  }
  return parsed;
}

const ID1 = '1'.repeat(32);
const ID2 = '2'.repeat(32);
const ID3 = '3'.repeat(32);

/** An undoer that answers as told and records what it was asked. */
class ScriptedUndoer implements IUndoer {
  constructor(private readonly outcomes: UndoOutcome[]) {}
  asked: IUndoTarget[] = [];
  async undo(target: IUndoTarget): Promise<UndoOutcome> {
    this.asked.push(target);
    return this.outcomes.shift() ?? { state: 'done', by: null };
  }
}

describe('changesOfCall', () => {
  it('builds an edit with the source before and after', () => {
    const [change] = changesOfCall(event(ID1));
    expect(change).toMatchObject({
      action: 'edit',
      cellId: 'c0',
      before: 'x = 1',
      after: 'x = 2',
      fromIndex: null,
      state: 'pending'
    });
  });

  it('builds an insert, a delete and a move', () => {
    expect(
      changesOfCall(event(ID1, { action: 'insert', previousCell: null }))[0]
    ).toMatchObject({ action: 'insert', before: '', after: 'x = 2' });
    expect(
      changesOfCall(
        event(ID1, {
          action: 'delete',
          source: 'x = 1',
          previousCell: { cell_type: 'code', id: 'c9', source: ['x', ' = 1'] }
        })
      )[0]
    ).toMatchObject({
      action: 'delete',
      cellId: 'c9',
      before: 'x = 1',
      after: null
    });
    expect(
      changesOfCall(
        event(ID1, {
          action: 'move',
          fromIndex: 3,
          cellIndex: 0,
          previousCell: null
        })
      )[0]
    ).toMatchObject({ action: 'move', fromIndex: 3 });
    // A move to where the cell was, and a failed call: nothing to review.
    expect(changesOfCall(event(ID1, { action: 'move', fromIndex: 0 }))).toEqual(
      []
    );
    expect(changesOfCall(event(ID1, { status: 'error' }))).toEqual([]);
  });

  it('gives one change per cell of a batch, first before to last after', () => {
    const batch = event(ID1, {
      action: 'batch',
      changes: [
        {
          action: 'edit',
          cellId: 'a',
          cellIndex: 0,
          source: 'a1',
          previousCell: { cell_type: 'code', source: 'a0' }
        },
        {
          action: 'edit',
          cellId: 'a',
          cellIndex: 0,
          source: 'a2',
          previousCell: { cell_type: 'code', source: 'a1' }
        },
        { action: 'insert', cellId: 'b', cellIndex: 1, source: 'b' },
        { action: 'insert', cellId: 't', cellIndex: 2, source: 't' },
        {
          action: 'delete',
          cellId: 't',
          cellIndex: 2,
          source: 't',
          previousCell: { cell_type: 'code', id: 't', source: 't' }
        }
      ]
    });
    const changes = changesOfCall(batch);
    expect(changes.map(c => [c.cellId, c.action, c.before, c.after])).toEqual([
      ['a', 'edit', 'a0', 'a2'],
      ['b', 'insert', '', 'b']
    ]);
    // Each change carries only its cell's changes: what undoing it reverts.
    expect(changes[0].event.changes).toHaveLength(2);
    expect(changes[1].event.changes).toHaveLength(1);
  });
});

describe('ReviewModel', () => {
  it('counts cells, not calls: an insert then an edit of one cell is one cell', () => {
    const model = new ReviewModel();
    model.handleEmission(
      notebookEditEmission(ID1, {
        action: 'insert',
        cellId: 'new',
        previousCell: null
      })
    );
    model.handleEmission(notebookEditEmission(ID2, { cellId: 'new' }));
    model.handleEmission(notebookEditEmission(ID3, { cellId: 'c1' }));
    const pending = model.pendingOf('a.ipynb');
    expect(pending).toHaveLength(3);
    expect(changedCells(pending)).toBe(2);
  });

  it('restores calls with their kept review states', () => {
    const model = new ReviewModel();
    model.restore(
      [notebookEditEmission(ID1)],
      [{ cellId: null, state: 'kept' }]
    );
    model.restore([notebookEditEmission(ID2, { cellId: 'c1' })], []);
    expect(model.pendingOf('a.ipynb').map(c => c.callId)).toEqual([ID2]);
    expect(model.changesOf('a.ipynb')).toHaveLength(2);
  });

  it("leaves out a call the history kept as the person's own undo", () => {
    const model = new ReviewModel();
    model.restore(
      [notebookEditEmission(ID1)],
      [{ cellId: null, state: 'yours' }]
    );
    expect(model.changesOf('a.ipynb')).toEqual([]);
    // Not added later either, when its event comes again.
    model.handleEmission(notebookEditEmission(ID1));
    expect(model.changesOf('a.ipynb')).toEqual([]);
  });

  it('forms a turn of the calls since the person last kept', () => {
    const model = new ReviewModel();
    model.handleEmission(notebookEditEmission(ID1));
    model.handleEmission(notebookEditEmission(ID2, { cellId: 'c1' }));
    expect(model.turnOf('a.ipynb')).toEqual([ID2, ID1]);
    model.setState(ID1, null, 'kept');
    expect(model.turnOf('a.ipynb')).toEqual([ID2]);
    model.startTurn('a.ipynb'); // kept all: only later calls form the turn
    expect(model.turnOf('a.ipynb')).toEqual([]);
    model.handleEmission(notebookEditEmission(ID3, { cellId: 'c3' }));
    expect(model.turnOf('a.ipynb')).toEqual([ID3]);
    model.ignoreCall(ID2);
    model.ignoreCall(ID3);
    expect(model.pendingOf('a.ipynb')).toEqual([]);
    model.handleEmission(notebookEditEmission(ID2));
    expect(model.pendingOf('a.ipynb')).toEqual([]); // ignored for good
  });
});

describe('ReviewController', () => {
  it('keeps a change and stores the state', async () => {
    const model = new ReviewModel();
    const stored: unknown[] = [];
    const controller = new ReviewController({
      model,
      undoer: new ScriptedUndoer([]),
      store: async review => void stored.push(review)
    });
    model.handleEmission(notebookEditEmission(ID1));
    await controller.keep(model.pendingOf('a.ipynb'));
    expect(model.pendingOf('a.ipynb')).toEqual([]);
    expect(stored).toEqual([
      { path: 'a.ipynb', call_ids: [ID1], cell_id: null, state: 'kept' }
    ]);
  });

  it('undoes a change, ignores the undo call, and shows a refusal', async () => {
    const model = new ReviewModel();
    const undoer = new ScriptedUndoer([
      { state: 'refused', message: 'Not undone: changed since.' },
      { state: 'done', by: ID3 }
    ]);
    const controller = new ReviewController({ model, undoer });
    model.handleEmission(notebookEditEmission(ID1));
    const [change] = model.pendingOf('a.ipynb');

    expect((await controller.undo(change)).state).toBe('refused');
    expect(controller.messageOf(change.key)).toBe('Not undone: changed since.');
    expect(model.pendingOf('a.ipynb')).toHaveLength(1);

    expect((await controller.undo(change)).state).toBe('done');
    expect(undoer.asked.map(t => t.cellId)).toEqual([null, null]);
    expect(change.state).toBe('undone');
    expect(controller.messageOf(change.key)).toBeNull();
    model.handleEmission(notebookEditEmission(ID3));
    expect(model.pendingOf('a.ipynb')).toEqual([]);
  });

  it('undoes the turn newest call first, stopping at a refusal', async () => {
    const model = new ReviewModel();
    const undoer = new ScriptedUndoer([
      { state: 'done', by: null },
      { state: 'refused', message: 'no' }
    ]);
    const controller = new ReviewController({ model, undoer });
    model.handleEmission(notebookEditEmission(ID1));
    model.handleEmission(notebookEditEmission(ID2, { cellId: 'c1' }));
    const outcome = await controller.undoTurn('a.ipynb');
    expect(outcome.state).toBe('refused');
    expect(undoer.asked.map(t => t.callId)).toEqual([ID2, ID1]);
    expect(model.pendingOf('a.ipynb').map(c => c.callId)).toEqual([ID1]);
  });
});

describe('ChainedUndoer', () => {
  it('falls back to the next way', async () => {
    const room = new ScriptedUndoer([{ state: 'fallback' }]);
    const guarded = new ScriptedUndoer([{ state: 'done', by: ID3 }]);
    const chain = new ChainedUndoer([room, guarded]);
    const target = {
      path: 'a.ipynb',
      callId: ID1,
      cellId: null,
      event: event(ID1)
    };
    expect(await chain.undo(target)).toEqual({ state: 'done', by: ID3 });
    expect(room.asked).toHaveLength(1);
    expect(guarded.asked).toHaveLength(1);
  });
});

describe('NotebookReview', () => {
  it('shows the diff above the changed cell, and removes it when kept', async () => {
    const { notebook, dispose } = await openNotebook();
    try {
      const model = new ReviewModel();
      const controller = new ReviewController({
        model,
        undoer: new ScriptedUndoer([])
      });
      const view = new NotebookReview(notebook, controller, UNTRANSLATED);
      model.handleEmission(
        notebookEditEmission(ID1, { path: notebook.context.path })
      );
      const cell = notebook.content.widgets[0].node;
      await waitFor(() => cell.querySelector('.jp-xcsh-Review'));
      const lines = [...cell.querySelectorAll('.jp-xcsh-Diff-line')].map(
        l => l.className.split(' ')[1]
      );
      expect(lines).toEqual(['jp-mod-removed', 'jp-mod-added']);
      expect(view.bar.node.textContent).toContain(
        '1 cell with agent changes to review'
      );
      notebook.content.activeCellIndex = 0;
      expect(view.activeChange()?.callId).toBe(ID1);

      (cell.querySelector('.jp-xcsh-Review-keep') as HTMLButtonElement).click();
      await waitFor(() => cell.querySelector('.jp-xcsh-Review') === null);
      expect(view.bar.isHidden).toBe(true);
      view.dispose();
    } finally {
      dispose();
    }
  });

  it('summarises how the outputs changed', async () => {
    const { notebook, dispose } = await openNotebook();
    try {
      const model = new ReviewModel();
      const controller = new ReviewController({
        model,
        undoer: new ScriptedUndoer([])
      });
      const view = new NotebookReview(notebook, controller, UNTRANSLATED);
      const stream = { output_type: 'stream', name: 'stdout', text: '1\n' };
      model.handleEmission(
        notebookEditEmission(ID1, {
          path: notebook.context.path,
          previousCell: {
            cell_type: 'code',
            source: 'x = 1',
            metadata: {},
            outputs: [stream, stream]
          }
        })
      );
      const cell = notebook.content.widgets[0].node;
      const outputs = await waitFor(() =>
        cell.querySelector('.jp-xcsh-Review-outputs')
      );
      expect(outputs.textContent).toBe(
        'Outputs: 0 added, 2 removed, 0 changed'
      );
      view.dispose();
    } finally {
      dispose();
    }
  });

  it('shows a deleted cell as a ghost at its old position', async () => {
    const { notebook, dispose } = await openNotebook();
    try {
      const model = new ReviewModel();
      const controller = new ReviewController({
        model,
        undoer: new ScriptedUndoer([])
      });
      const view = new NotebookReview(notebook, controller, UNTRANSLATED);
      model.handleEmission(
        notebookEditEmission(ID1, {
          path: notebook.context.path,
          action: 'delete',
          cellId: 'gone',
          cellIndex: 0,
          source: 'old = 1',
          previousCell: { cell_type: 'code', id: 'gone', source: 'old = 1' }
        })
      );
      const cell = notebook.content.widgets[0].node;
      const ghost = await waitFor(() =>
        cell.querySelector('.jp-xcsh-ReviewGhost')
      );
      expect(ghost.textContent).toContain(
        'Deleted by an agent (was at position 1)'
      );
      expect(
        ghost.querySelector('.jp-xcsh-Diff-line.jp-mod-removed')?.textContent
      ).toContain('old = 1');
      view.dispose();
    } finally {
      dispose();
    }
  });
});
