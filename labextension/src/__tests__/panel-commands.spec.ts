/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { CommandRegistry } from '@lumino/commands';
import { Widget } from '@lumino/widgets';

import {
  addActivityCommands,
  commandActions,
  CommandIDs,
  PALETTE_ITEMS
} from '../panel/commands';
import { PYTHON_SCHEMA_ID } from '../core/events';
import { ActivityModel } from '../core/activity';
import { ActivityPanel } from '../panel/widget';
import { choose, notebookEditEmission, waitFor } from './helpers';

const notebookCall = notebookEditEmission;

function pythonEvent(callId: string, fields: Record<string, unknown>) {
  return { schema_id: PYTHON_SCHEMA_ID, callId, session: 's', ...fields };
}

function setUp() {
  const commands = new CommandRegistry();
  const model = new ActivityModel();
  const actions = {
    openNotebook: jest.fn(() => Promise.resolve()),
    openArtifact: jest.fn(() => Promise.resolve()),
    interrupt: jest.fn(() => Promise.resolve()),
    answer: jest.fn(() => Promise.resolve()),
    undo: jest.fn(() => Promise.resolve()),
    keep: jest.fn(() => Promise.resolve())
  };
  const panel = new ActivityPanel({ model, actions: commandActions(commands) });
  const show = jest.fn();
  const ask = jest.fn(() => Promise.resolve<string | null>('typed'));
  addActivityCommands({ commands, model, panel, show, actions, ask });
  const execute = jest.spyOn(commands, 'execute');
  return { commands, model, panel, actions, show, ask, execute };
}

describe('the activity commands', () => {
  it('are all in the palette list, each with a label', () => {
    const { commands } = setUp();
    for (const item of PALETTE_ITEMS) {
      expect(commands.hasCommand(item.command)).toBe(true);
      expect(commands.label(item.command, item.args)).not.toBe('');
    }
    const ids = new Set(PALETTE_ITEMS.map(item => item.command));
    for (const id of [
      CommandIDs.show,
      CommandIDs.interrupt,
      CommandIDs.answer,
      CommandIDs.undo,
      CommandIDs.keep,
      CommandIDs.clear,
      CommandIDs.filter
    ]) {
      expect(ids.has(id)).toBe(true);
    }
  });

  it('act on the newest call they apply to when none is named', async () => {
    const { commands, model, actions } = setUp();
    expect(commands.isEnabled(CommandIDs.interrupt)).toBe(false);
    expect(commands.isEnabled(CommandIDs.undo)).toBe(false);
    model.handleEmission(notebookCall('n1'));
    model.handleEmission(notebookCall('n2'));
    model.handleEmission(pythonEvent('p1', { event: 'started', cells: [] }));
    model.handleEmission(pythonEvent('p2', { event: 'started', cells: [] }));
    model.handleEmission(
      pythonEvent('p2', { event: 'finished', result: { isError: false } })
    );

    await commands.execute(CommandIDs.interrupt);
    await commands.execute(CommandIDs.undo);
    await commands.execute(CommandIDs.keep, { callId: 'n1' });

    expect(actions.interrupt.mock.calls).toEqual([[model.get('p1')]]);
    expect(actions.undo.mock.calls).toEqual([[model.get('n2')]]);
    expect(actions.keep.mock.calls).toEqual([[model.get('n1')]]);
  });

  it('answer a prompt, asking the person for the answer from the palette', async () => {
    const { commands, model, actions, ask } = setUp();
    model.handleEmission(pythonEvent('p1', { event: 'started', cells: [] }));
    expect(commands.isEnabled(CommandIDs.answer)).toBe(false);
    model.handleEmission(
      pythonEvent('p1', {
        event: 'input',
        input: { state: 'waiting', runId: 'a'.repeat(32), prompt: 'name? ' }
      })
    );
    expect(commands.isEnabled(CommandIDs.answer)).toBe(true);

    await commands.execute(CommandIDs.answer);
    await commands.execute(CommandIDs.answer, { callId: 'p1', value: 'Ada' });

    expect(ask.mock.calls).toEqual([['name? ', false]]);
    const call = model.get('p1');
    expect(actions.answer.mock.calls).toEqual([
      [call, 'typed'],
      [call, 'Ada']
    ]);
  });

  it('filter the panel, and say which filter is on', async () => {
    const { commands, panel } = setUp();
    expect(commands.isToggled(CommandIDs.filter, { kind: 'all' })).toBe(true);

    await commands.execute(CommandIDs.filter, { kind: 'python' });

    expect(panel.filter).toBe('python');
    expect(commands.isToggled(CommandIDs.filter, { kind: 'python' })).toBe(
      true
    );
    expect(commands.label(CommandIDs.filter, { kind: 'notebook' })).toBe(
      'Show Agent Notebook Calls Only'
    );
  });

  it('are what the panel buttons run', async () => {
    const { model, panel, execute, actions } = setUp();
    Widget.attach(panel, document.body);
    try {
      model.handleEmission(notebookCall('n1'));
      model.handleEmission(
        pythonEvent('p1', { event: 'started', cells: [{ code: 'x' }] })
      );
      const node = panel.node;

      // Each control is waited for: the toolbar's React items render on a later
      // frame, and a loaded machine (a CI run) can show them after the rows.
      const button = (selector: string) =>
        waitFor(
          () => node.querySelector<HTMLButtonElement>(selector),
          selector
        );
      (await button('.jp-xcsh-Interrupt')).click();
      (await button('.jp-xcsh-Undo')).click();
      choose(
        await waitFor(() =>
          node.querySelector<HTMLSelectElement>('.jp-xcsh-Filter select')
        ),
        'notebook'
      );
      (await button('.jp-xcsh-Clear')).click();

      expect(execute.mock.calls).toEqual([
        [CommandIDs.interrupt, { callId: 'p1' }],
        [CommandIDs.undo, { callId: 'n1' }],
        [CommandIDs.filter, { kind: 'notebook' }],
        [CommandIDs.clear, {}]
      ]);
      expect(actions.interrupt).toHaveBeenCalledTimes(1);
      expect(actions.undo).toHaveBeenCalledTimes(1);
      expect(panel.filter).toBe('notebook');
      expect(model.calls.map(call => call.id)).toEqual(['p1']);
    } finally {
      panel.dispose();
    }
  });
});
