/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { Context } from '@jupyterlab/docregistry';
import type { INotebookModel, NotebookPanel } from '@jupyterlab/notebook';
import { NBTestUtils } from '@jupyterlab/notebook/lib/testutils';
import { Widget } from '@lumino/widgets';

import { NOTEBOOK_SCHEMA_ID } from '../core/events';

/**
 * Wait until `check` gives something (not null, undefined or false): the
 * panel's toolbar renders with React, a moment after the panel is attached.
 */
export async function waitFor<T>(
  check: () => T | null | undefined | false,
  what = 'the condition'
): Promise<T> {
  // A deadline, not a count of tries: a loaded machine (a CI run) is slow to render.
  const deadline = Date.now() + 10000;
  while (Date.now() < deadline) {
    const value = check();
    if (value !== null && value !== undefined && value !== false) {
      return value;
    }
    await new Promise(resolve => setTimeout(resolve, 10));
  }
  throw new Error(`Timed out waiting for ${what}`);
}

/**
 * Choose `value` in a select as a person does (React hears a bubbling change).
 */
export function choose(select: HTMLSelectElement, value: string): void {
  select.value = value;
  select.dispatchEvent(new Event('change', { bubbles: true }));
}

/**
 * The emission of a finished notebook edit of cell `c0` of `a.ipynb`, with
 * what a revert needs.
 */
export function notebookEditEmission(
  callId: string,
  fields: Record<string, unknown> = {}
): Record<string, unknown> {
  return {
    schema_id: NOTEBOOK_SCHEMA_ID,
    callId,
    action: 'edit',
    path: 'a.ipynb',
    status: 'ok',
    cellIndex: 0,
    cellId: 'c0',
    cellType: 'code',
    source: 'x = 2',
    sourceHash: '0123456789abcdef',
    previousCell: { cell_type: 'code', source: 'x = 1', metadata: {} },
    ...fields
  };
}

/**
 * A notebook panel on a mock context, attached, with one code cell `c0`
 * holding `x = 2`; `dispose` ends both.
 */
export async function openNotebook(): Promise<{
  context: Context<INotebookModel>;
  notebook: NotebookPanel;
  dispose(): void;
}> {
  const context = await NBTestUtils.createMockContext(false);
  const notebook = NBTestUtils.createNotebookPanel(context);
  notebook.content.model!.sharedModel.insertCells(0, [
    { cell_type: 'code', id: 'c0', source: 'x = 2', metadata: {} } as any
  ]);
  Widget.attach(notebook, document.body);
  return {
    context,
    notebook,
    dispose: () => {
      notebook.dispose();
      context.dispose();
    }
  };
}
