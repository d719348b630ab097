/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The activity panel's actions as commands, so that each is in the command palette (and can be
 * given a keyboard shortcut), and the panel's buttons run the very same commands.
 *
 * A command given a `callId` acts on that call (the buttons always give it); without one (the
 * palette) it acts on the newest call it applies to.
 */

import {
  nullTranslator,
  type TranslationBundle
} from '@jupyterlab/translation';
import type { CommandRegistry } from '@lumino/commands';
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';

import {
  ActivityModel,
  INotebookCall,
  IPythonCall,
  isRunning,
  type ActivityCall
} from '../core/activity';
import { canUndo } from '../core/undoable';
import type { ActivityFilter } from '../core/activity';
import type { ActivityPanel } from './widget';

/**
 * The command ids of the activity panel.
 */
export namespace CommandIDs {
  /** Show the activity panel. */
  export const show = 'jupyter-xcsh:show-activity';
  /** Cancel a running python call or run in place. */
  export const interrupt = 'jupyter-xcsh:interrupt';
  /** Answer the prompt a call waits on. */
  export const answer = 'jupyter-xcsh:answer';
  /** Undo a notebook change: the review's undo of the call. */
  export const undo = 'jupyter-xcsh:undo';
  /** Keep a notebook change: the review's keep of the call. */
  export const keep = 'jupyter-xcsh:keep';
  /** Remove finished calls from the panel. */
  export const clear = 'jupyter-xcsh:clear-activity';
  /** List only the calls of one kind (`kind`: all, notebook, python). */
  export const filter = 'jupyter-xcsh:filter-activity';
  /** Open a notebook at a cell (`path`, `cellIndex`). */
  export const openNotebook = 'jupyter-xcsh:open-notebook';
  /** Open an artifact file (`path`). */
  export const openArtifact = 'jupyter-xcsh:open-artifact';
}

/**
 * The commands offered in the palette, with their arguments.
 */
export const PALETTE_ITEMS: { command: string; args?: { kind: string } }[] = [
  { command: CommandIDs.show },
  { command: CommandIDs.interrupt },
  { command: CommandIDs.answer },
  { command: CommandIDs.undo },
  { command: CommandIDs.keep },
  { command: CommandIDs.clear },
  { command: CommandIDs.filter, args: { kind: 'all' } },
  { command: CommandIDs.filter, args: { kind: 'notebook' } },
  { command: CommandIDs.filter, args: { kind: 'python' } }
];

/**
 * What the commands act with.
 */
export interface IActivityCommandsOptions {
  commands: CommandRegistry;
  model: ActivityModel;
  /** The panel, whose filter the filter command sets. */
  panel: { filter: ActivityFilter };
  /** Show the panel. */
  show(): void;
  /** What the actions do (interrupt, answer, undo, keep, open). */
  actions: Pick<
    ActivityPanel.IActions,
    'interrupt' | 'answer' | 'undo' | 'keep' | 'openNotebook' | 'openArtifact'
  >;
  /** Ask the person for an answer to a prompt; `null` when they cancel. */
  ask(prompt: string, password: boolean): Promise<string | null>;
  trans?: TranslationBundle;
}

const FILTERS: ActivityFilter[] = ['all', 'notebook', 'python'];

/**
 * Add the activity panel's commands.
 */
export function addActivityCommands(options: IActivityCommandsOptions): void {
  const { commands, model, panel, actions } = options;
  const trans = options.trans ?? nullTranslator.load('jupyter_xcsh');
  // The call named by `callId`, else the newest call that `fits`.
  const target = <T extends ActivityCall>(
    args: ReadonlyPartialJSONObject,
    fits: (call: ActivityCall) => call is T
  ): T | undefined => {
    const id = typeof args.callId === 'string' ? args.callId : null;
    return model.calls.find(
      (call): call is T => (id === null || call.id === id) && fits(call)
    );
  };
  const running = (call: ActivityCall): call is IPythonCall =>
    call.kind === 'python' && isRunning(call) && !call.interrupting;
  const waiting = (call: ActivityCall): call is IPythonCall =>
    call.kind === 'python' && call.input?.state === 'waiting';
  // A change still to review: neither kept nor undone, nor being undone.
  const reviewable = (call: ActivityCall): call is INotebookCall =>
    call.kind === 'notebook' &&
    call.undoOf === null &&
    canUndo(call.event) &&
    (call.undo.state === 'idle' ||
      call.undo.state === 'refused' ||
      call.undo.state === 'failed');
  // A command on one call: the one named by `callId`, else the newest that `fits`.
  const addCallCommand = <T extends ActivityCall>(
    id: string,
    text: { label: string; caption: string },
    fits: (call: ActivityCall) => call is T,
    act: (call: T, args: ReadonlyPartialJSONObject) => unknown,
    more: Record<string, unknown> = {}
  ): void => {
    commands.addCommand(id, {
      ...text,
      describedBy: {
        args: {
          type: 'object',
          properties: {
            callId: {
              type: 'string',
              description: trans.__(
                'The call (default: the newest it applies to)'
              )
            },
            ...more
          }
        }
      },
      isEnabled: args => target(args, fits) !== undefined,
      execute: args => {
        const call = target(args, fits);
        return call === undefined ? undefined : act(call, args);
      }
    });
  };

  commands.addCommand(CommandIDs.show, {
    label: trans.__('Show Agent Activity'),
    caption: trans.__('Show the notebook and python tool calls of agents'),
    execute: () => options.show()
  });
  addCallCommand(
    CommandIDs.interrupt,
    {
      label: trans.__('Interrupt Agent Call'),
      caption: trans.__('Cancel a running python call or run in place')
    },
    running,
    call => actions.interrupt(call)
  );
  addCallCommand(
    CommandIDs.answer,
    {
      label: trans.__('Answer Agent Prompt…'),
      caption: trans.__('Answer the input a call waits for')
    },
    waiting,
    async (call, args) => {
      const input = call.input!;
      const value =
        typeof args.value === 'string'
          ? args.value
          : await options.ask(input.prompt, input.password);
      return value === null ? undefined : actions.answer(call, value);
    },
    { value: { type: 'string', description: trans.__('The answer') } }
  );
  addCallCommand(
    CommandIDs.undo,
    {
      label: trans.__('Undo Agent Change'),
      caption: trans.__('Put the cells an agent changed back as they were')
    },
    reviewable,
    call => actions.undo(call)
  );
  addCallCommand(
    CommandIDs.keep,
    {
      label: trans.__('Keep Agent Change'),
      caption: trans.__("Keep the changes of an agent's call")
    },
    reviewable,
    call => actions.keep(call)
  );
  commands.addCommand(CommandIDs.clear, {
    label: trans.__('Clear Agent Activity'),
    caption: trans.__('Remove finished calls from the list'),
    execute: () => model.clear()
  });
  const filterLabels: Record<ActivityFilter, string> = {
    all: trans.__('Show All Agent Calls'),
    notebook: trans.__('Show Agent Notebook Calls Only'),
    python: trans.__('Show Agent Python Calls Only')
  };
  const kind = (args: ReadonlyPartialJSONObject): ActivityFilter =>
    FILTERS.includes(args.kind as ActivityFilter)
      ? (args.kind as ActivityFilter)
      : 'all';
  commands.addCommand(CommandIDs.filter, {
    label: args => filterLabels[kind(args)],
    caption: trans.__('Choose which calls the activity panel lists'),
    describedBy: {
      args: {
        type: 'object',
        properties: { kind: { type: 'string', enum: FILTERS } }
      }
    },
    isToggled: args => panel.filter === kind(args),
    execute: args => {
      panel.filter = kind(args);
    }
  });
  commands.addCommand(CommandIDs.openNotebook, {
    label: args =>
      trans.__('Open %1', typeof args.path === 'string' ? args.path : ''),
    caption: trans.__('Open the notebook at the cell a call touched'),
    execute: args =>
      typeof args.path === 'string'
        ? actions.openNotebook(
            args.path,
            typeof args.cellIndex === 'number' ? args.cellIndex : null
          )
        : undefined
  });
  commands.addCommand(CommandIDs.openArtifact, {
    label: args =>
      trans.__('Open %1', typeof args.path === 'string' ? args.path : ''),
    caption: trans.__('Open a file a call kept'),
    execute: args =>
      typeof args.path === 'string'
        ? actions.openArtifact(args.path)
        : undefined
  });
}

/**
 * The panel's buttons and links, each running its command.
 */
export function commandActions(
  commands: CommandRegistry
): ActivityPanel.IActions {
  const run = (id: string, args: ReadonlyPartialJSONObject = {}) =>
    commands.execute(id, args);
  return {
    openNotebook: (path, cellIndex) =>
      run(CommandIDs.openNotebook, { path, cellIndex }),
    openArtifact: path => run(CommandIDs.openArtifact, { path }),
    interrupt: call => run(CommandIDs.interrupt, { callId: call.id }),
    answer: (call, value) => run(CommandIDs.answer, { callId: call.id, value }),
    undo: call => run(CommandIDs.undo, { callId: call.id }),
    keep: call => run(CommandIDs.keep, { callId: call.id }),
    clear: () => run(CommandIDs.clear),
    filter: kind => run(CommandIDs.filter, { kind })
  };
}
