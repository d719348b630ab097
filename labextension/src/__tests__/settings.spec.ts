/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { CommandRegistry } from '@lumino/commands';
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';

import { CellMarks } from '../marks/model';
import { MARKED_CELL_CLASS, NotebookMarks } from '../marks/notebookmarks';
import { commandActions } from '../panel/commands';
import { NOTEBOOK_SCHEMA_ID, PYTHON_SCHEMA_ID } from '../core/events';
import { ActivityModel } from '../core/activity';
import { ActivityPanel } from '../panel/widget';
import {
  activitySettings,
  activitySettingsApplier,
  followSettings,
  marksEnabled
} from '../settings';
import { openNotebook, waitFor } from './helpers';

// The settings schemas the lab reads (package.json `jupyterlab.schemaDir`).
import activitySchema from '../../../schema/activity.json';
import marksSchema from '../../../schema/marks.json';

/**
 * Settings as the lab's registry gives them: a composite and a signal when
 * a person changes one.
 */
class FakeSettings {
  constructor(public composite: ReadonlyPartialJSONObject) {}
  readonly changed = new Signal<this, void>(this);
  set(key: string, value: unknown): void {
    this.composite = { ...this.composite, [key]: value as never };
    this.changed.emit();
  }
}

/** The defaults of a schema, as the registry composes them with nothing set. */
function defaults(schema: {
  properties: Record<string, { default?: unknown }>;
}): ReadonlyPartialJSONObject {
  return Object.fromEntries(
    Object.entries(schema.properties).map(([key, p]) => [key, p.default])
  ) as ReadonlyPartialJSONObject;
}

describe('the settings schemas', () => {
  it('default to what the code does without settings', () => {
    expect(activitySettings(defaults(activitySchema))).toEqual({
      filter: 'all',
      maxCalls: ActivityModel.MAX_CALLS
    });
    expect(marksEnabled(defaults(marksSchema))).toBe(true);
    expect(activitySettings({ filter: 'nonsense', maxCalls: -3 })).toEqual({
      filter: 'all',
      maxCalls: ActivityModel.MAX_CALLS
    });
  });
});

describe('the activity panel follows its settings live', () => {
  it('lists the calls the filter setting names and keeps as many calls as set', async () => {
    const model = new ActivityModel();
    const panel = new ActivityPanel({
      model,
      actions: commandActions(new CommandRegistry())
    });
    Widget.attach(panel, document.body);
    const settings = new FakeSettings(defaults(activitySchema));
    followSettings(settings, activitySettingsApplier(model, panel));
    for (let i = 0; i < 4; i++) {
      model.handleEmission({
        schema_id: NOTEBOOK_SCHEMA_ID,
        callId: `n${i}`,
        action: 'edit',
        path: 'a.ipynb',
        status: 'ok',
        cellIndex: 0,
        cellType: 'code',
        source: `x = ${i}`
      });
    }
    model.handleEmission({
      schema_id: PYTHON_SCHEMA_ID,
      callId: 'p1',
      session: 's',
      event: 'started',
      cells: [{ index: 0, title: '', code: 'pass' }]
    });
    const listed = () =>
      [...panel.node.querySelectorAll<HTMLElement>('.jp-xcsh-Call')]
        .filter(element => !element.hidden)
        .map(element => element.dataset.callId);
    expect(listed()).toEqual(['p1', 'n3', 'n2', 'n1', 'n0']);

    settings.set('filter', 'python');
    expect(panel.filter).toBe('python');
    await waitFor(
      () => panel.node.querySelector('select')?.value === 'python',
      'the toolbar select to show the setting'
    );
    expect(listed()).toEqual(['p1']);

    // A filter chosen in the panel stays while another setting changes.
    panel.filter = 'notebook';
    settings.set('maxCalls', 3);
    expect(panel.filter).toBe('notebook');
    // The oldest finished calls go at once; the running one stays.
    expect(model.calls.map(call => call.id)).toEqual(['p1', 'n3', 'n2']);
    expect(listed()).toEqual(['n3', 'n2']);

    settings.set('filter', 'all');
    expect(listed()).toEqual(['p1', 'n3', 'n2']);
    panel.dispose();
  });
});

describe('the marks follow their setting live', () => {
  it('hides the marks when switched off and shows them again when on', async () => {
    const { context, notebook, dispose } = await openNotebook();
    const marks = new CellMarks();
    const settings = new FakeSettings(defaults(marksSchema));
    let enabled = true;
    const view = new NotebookMarks(notebook, marks, {
      enabled: () => enabled
    });
    followSettings(settings, composite => {
      enabled = marksEnabled(composite);
      view.refresh();
    });
    marks.add({
      path: context.path,
      callId: 'call-1',
      action: 'edit',
      cellId: 'c0',
      cellIndex: 0,
      source: 'x = 2',
      time: 0
    });
    await new Promise(resolve => setTimeout(resolve, 0));
    const cell = notebook.content.widgets[0];
    const marked = () =>
      cell.hasClass(MARKED_CELL_CLASS) &&
      cell.node.querySelector('.jp-xcsh-CellMark') !== null;
    expect(marked()).toBe(true);

    settings.set('enabled', false);
    expect(cell.hasClass(MARKED_CELL_CLASS)).toBe(false);
    expect(cell.node.querySelector('.jp-xcsh-CellMark')).toBeNull();
    // Still known: switched on again, the mark is back.
    expect(marks.marksOf(context.path)).toHaveLength(1);

    settings.set('enabled', true);
    expect(marked()).toBe(true);
    view.dispose();
    dispose();
  });
});
