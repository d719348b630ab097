/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  ASK_BEFORE_RUN_CLASS,
  hasAskBeforeRun,
  NotebookAskMarks,
  setAskBeforeRun,
  withAskBeforeRun
} from '../policy/celltag';
import { openNotebook, waitFor } from './helpers';

describe('the ask-before-run tag', () => {
  it('is added and removed, other tags kept in order', () => {
    expect(withAskBeforeRun(['a', 'b'], true)).toEqual([
      'a',
      'b',
      'ask-before-run'
    ]);
    expect(withAskBeforeRun(['ask-before-run', 'a'], true)).toEqual([
      'a',
      'ask-before-run'
    ]);
    expect(withAskBeforeRun(['a', 'ask-before-run'], false)).toEqual(['a']);
    expect(withAskBeforeRun(['ask-before-run'], false)).toBeNull();
    expect(withAskBeforeRun('not a list', true)).toEqual(['ask-before-run']);
  });

  it('counts only as a string in a list', () => {
    expect(hasAskBeforeRun(['x', 'ask-before-run'])).toBe(true);
    expect(hasAskBeforeRun('ask-before-run')).toBe(false);
    expect(hasAskBeforeRun(undefined)).toBe(false);
  });

  it('marks tagged cells of an open notebook and follows their metadata', async () => {
    const { notebook, dispose } = await openNotebook();
    try {
      const marks = new NotebookAskMarks(notebook);
      const cell = notebook.content.widgets[0];
      expect(cell.hasClass(ASK_BEFORE_RUN_CLASS)).toBe(false);
      setAskBeforeRun(cell.model, true);
      expect(cell.model.getMetadata('tags')).toEqual(['ask-before-run']);
      await waitFor(() => cell.hasClass(ASK_BEFORE_RUN_CLASS), 'the mark');
      expect(
        cell.node.querySelector('.jp-xcsh-AskBeforeRun')?.textContent
      ).toBe('Agents ask before running');
      // By hand, in the cell's tags, as the lab's tag editor writes them.
      cell.model.setMetadata('tags', ['slow']);
      await waitFor(() => !cell.hasClass(ASK_BEFORE_RUN_CLASS), 'no mark');
      expect(cell.node.querySelector('.jp-xcsh-AskBeforeRun')).toBeNull();
      cell.model.setMetadata('tags', ['slow', 'ask-before-run']);
      await waitFor(() => cell.hasClass(ASK_BEFORE_RUN_CLASS), 'the mark');
      setAskBeforeRun(cell.model, false);
      expect(cell.model.getMetadata('tags')).toEqual(['slow']);
      marks.dispose();
      expect(cell.hasClass(ASK_BEFORE_RUN_CLASS)).toBe(false);
    } finally {
      dispose();
    }
  });

  it('marks a tagged cell inserted later', async () => {
    const { notebook, dispose } = await openNotebook();
    try {
      new NotebookAskMarks(notebook);
      notebook.content.model!.sharedModel.insertCells(1, [
        {
          cell_type: 'code',
          id: 'c1',
          source: 'train()',
          metadata: { tags: ['ask-before-run'] }
        } as any
      ]);
      await waitFor(
        () => notebook.content.widgets[1]?.hasClass(ASK_BEFORE_RUN_CLASS),
        'the new cell marked'
      );
      expect(notebook.content.widgets[0].hasClass(ASK_BEFORE_RUN_CLASS)).toBe(
        false
      );
    } finally {
      dispose();
    }
  });
});
