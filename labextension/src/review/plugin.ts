/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Event } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, type TranslationBundle } from '@jupyterlab/translation';

import type { IOpenCell } from './undorequest';
import { IAgentActivity, ICellMarks, ILiveSync, IXcshClient } from '../tokens';
import { translationBundle } from '../translation';
import { loadReviewHistory, serverStore } from './api';
import { ReviewController } from './controller';
import { type IReviewChange, ReviewModel } from './model';
import { NotebookReview } from './notebookreview';
import { ChainedUndoer, GuardedUndoer, type IUndoer, RoomUndoer } from './undo';

/**
 * The review's command ids.
 */
export namespace ReviewCommandIDs {
  /** Keep the agent's change to the active cell. */
  export const keepCell = 'jupyter-xcsh:review-keep-cell';
  /** Undo the agent's change to the active cell. */
  export const undoCell = 'jupyter-xcsh:review-undo-cell';
  /** Keep every change of the active cell's agent call. */
  export const keepCall = 'jupyter-xcsh:review-keep-call';
  /** Undo every change of the active cell's agent call. */
  export const undoCall = 'jupyter-xcsh:review-undo-call';
  /** Keep every change of the turn (the agent calls since the person last kept). */
  export const keepAll = 'jupyter-xcsh:review-keep-all';
  /** Undo every change of the turn. */
  export const undoAll = 'jupyter-xcsh:review-undo-all';
  /** Go to the next cell with a change. */
  export const next = 'jupyter-xcsh:review-next';
  /** Go to the previous cell with a change. */
  export const previous = 'jupyter-xcsh:review-previous';
}

/**
 * Review agents' changes in the notebooks open in the lab: diffs, ghosts of deleted cells,
 * keep and undo per cell, per call and per turn, kept in the server's activity history.
 */
export const reviewPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-xcsh:review',
  description:
    'Shows what agents changed in open notebooks, with keep and undo per cell, call and turn.',
  autoStart: true,
  requires: [IXcshClient, INotebookTracker],
  optional: [
    ICellMarks,
    IAgentActivity,
    ICommandPalette,
    ITranslator,
    ISettingRegistry,
    ILiveSync
  ],
  activate: (
    app: JupyterFrontEnd,
    client: IXcshClient,
    tracker: INotebookTracker,
    marks: ICellMarks | null,
    activity: IAgentActivity | null,
    palette: ICommandPalette | null,
    translator: ITranslator | null,
    settingRegistry: ISettingRegistry | null,
    liveSync: ILiveSync | null
  ): void => {
    const trans = translationBundle(translator);
    const model = new ReviewModel();
    const settings = app.serviceManager.serverSettings;
    const controller = new ReviewController({
      model,
      marks,
      trans,
      store: serverStore(settings),
      // A room's undo first (it keeps the person's later typing) where the notebook is open
      // in a room; else the guarded undo, at once.
      undoer: personsUndo(
        new ChainedUndoer([
          new RoomUndoer(settings, trans, path => openInRoom(tracker, path)),
          new GuardedUndoer(
            client,
            path => openCells(tracker, path),
            trans,
            callId => liveSync?.whenFollowed(callId) ?? Promise.resolve()
          )
        ]),
        activity,
        trans
      )
    });
    app.serviceManager.events.stream.connect(
      (_: Event.IManager, emission: Event.Emission) =>
        model.handleEmission(emission)
    );
    void loadReviewHistory(model, client);
    // The person's undo is not an agent's change.
    activity?.model.changed.connect((_, change) => {
      const call = activity.model.get(change.id);
      if (call?.kind === 'notebook' && call.undoOf !== null) {
        model.ignoreCall(call.id);
      }
    });
    // The activity panel shows each call's review state: the review's, one state.
    if (activity !== null) {
      model.changed.connect((_, path) => {
        for (const [callId, state] of callStates(model, path)) {
          const call = activity.model.get(callId);
          if (
            call?.kind === 'notebook' &&
            call.undo.state !== state &&
            call.undo.state !== 'pending'
          ) {
            activity.model.setUndo(
              callId,
              state === 'done' ? { state, by: null } : { state }
            );
          }
        }
      });
    }

    const views = new Map<NotebookPanel, NotebookReview>();
    const follow = (panel: NotebookPanel) => {
      const view = new NotebookReview(panel, controller, trans);
      views.set(panel, view);
      panel.disposed.connect(() => views.delete(panel));
    };
    tracker.forEach(follow);
    tracker.widgetAdded.connect((_, panel) => follow(panel));

    const current = (): NotebookReview | null => {
      const panel = tracker.currentWidget;
      return panel ? (views.get(panel) ?? null) : null;
    };
    const active = () => current()?.activeChange() ?? null;
    // The call a command is for: `callId` (the activity panel's), else the active cell's.
    const callOf = (args: { callId?: unknown }): string | null =>
      typeof args.callId === 'string'
        ? args.callId
        : (active()?.callId ?? null);
    const pending = () => {
      const view = current();
      return view !== null && model.pendingOf(view.path).length > 0;
    };
    const { commands } = app;
    commands.addCommand(ReviewCommandIDs.keepCell, {
      label: trans.__('Keep Agent Change to Cell'),
      caption: trans.__("Keep the agent's change to the active cell"),
      isEnabled: () => active() !== null,
      execute: async () => {
        const change = active();
        if (change !== null) {
          await controller.keep([change]);
        }
      }
    });
    commands.addCommand(ReviewCommandIDs.undoCell, {
      label: trans.__('Undo Agent Change to Cell'),
      caption: trans.__("Undo the agent's change to the active cell"),
      isEnabled: () => active() !== null,
      execute: async () => {
        const change = active();
        if (change !== null) {
          await controller.undo(change);
        }
      }
    });
    commands.addCommand(ReviewCommandIDs.keepCall, {
      label: trans.__('Keep All Changes of Agent Call'),
      caption: trans.__("Keep every change of the active cell's agent call"),
      isEnabled: args => callOf(args) !== null,
      execute: async args => {
        const callId = callOf(args);
        if (callId !== null) {
          await controller.keepCall(callId);
        }
      }
    });
    commands.addCommand(ReviewCommandIDs.undoCall, {
      label: trans.__('Undo All Changes of Agent Call'),
      caption: trans.__("Undo every change of the active cell's agent call"),
      isEnabled: args => callOf(args) !== null,
      execute: async args => {
        const callId = callOf(args);
        if (callId !== null) {
          await controller.undoCall(callId);
        }
      }
    });
    commands.addCommand(ReviewCommandIDs.keepAll, {
      label: trans.__('Keep All Agent Changes'),
      caption: trans.__(
        'Keep every agent change to this notebook since you last kept'
      ),
      isEnabled: pending,
      execute: async () => {
        const view = current();
        if (view !== null) {
          await controller.keepTurn(view.path);
        }
      }
    });
    commands.addCommand(ReviewCommandIDs.undoAll, {
      label: trans.__('Undo All Agent Changes'),
      caption: trans.__(
        'Undo every agent change to this notebook since you last kept'
      ),
      isEnabled: pending,
      execute: async () => {
        await current()?.undoAll();
      }
    });
    commands.addCommand(ReviewCommandIDs.next, {
      label: trans.__('Next Agent Change'),
      isEnabled: pending,
      execute: () => current()?.step(1)
    });
    commands.addCommand(ReviewCommandIDs.previous, {
      label: trans.__('Previous Agent Change'),
      isEnabled: pending,
      execute: () => current()?.step(-1)
    });
    for (const command of [
      ReviewCommandIDs.keepCell,
      ReviewCommandIDs.undoCell,
      ReviewCommandIDs.keepCall,
      ReviewCommandIDs.undoCall,
      ReviewCommandIDs.keepAll,
      ReviewCommandIDs.undoAll,
      ReviewCommandIDs.next,
      ReviewCommandIDs.previous
    ]) {
      palette?.addItem({ command, category: trans.__('Agent Review') });
    }
    // The keyboard shortcuts are in the plugin's schema (`schema/review.json`).
    void settingRegistry?.load(reviewPlugin.id).catch(() => undefined);
  }
};

/**
 * The cells of the notebook at `path` as open in the lab, or `null` when it is not open.
 */
/**
 * Whether the lab has the notebook at `path` open as a collaborative document (in a room).
 */
function openInRoom(tracker: INotebookTracker, path: string): boolean {
  const panel = tracker.find(
    widget => widget.context.path === path && widget.context.isReady
  );
  return panel?.context.model.collaborative === true;
}

/**
 * The review's undo, told to the activity panel: the call it made to undo is the person's,
 * linked to the agent call it undid, never listed as an agent's call; and the agent call shows
 * there as being undone, undone, or why not.
 */
function personsUndo(
  undoer: IUndoer,
  activity: IAgentActivity | null,
  trans: TranslationBundle
): IUndoer {
  return {
    undo: async target => {
      const model = activity?.model ?? null;
      const whole = target.cellId === null;
      if (whole) {
        model?.setUndo(target.callId, { state: 'pending' });
      }
      const outcome = await undoer.undo(target);
      if (model === null) {
        return outcome;
      }
      if (outcome.state === 'done') {
        if (outcome.by !== null) {
          model.linkUndo(outcome.by, target.callId);
        }
        if (whole) {
          model.setUndo(target.callId, { state: 'done', by: outcome.by });
        }
      } else if (outcome.state === 'refused') {
        model.setUndo(target.callId, {
          state: 'refused',
          message: outcome.message,
          detail: outcome.detail ?? null
        });
      } else {
        model.setUndo(target.callId, {
          state: 'failed',
          message:
            outcome.state === 'failed'
              ? outcome.message
              : trans.__('Nothing could undo this change.')
        });
      }
      return outcome;
    }
  };
}

/**
 * The calls of a notebook whose every change was decided, with the panel's word for it:
 * `done` when any of its changes was undone, else `kept`.
 */
function callStates(
  model: ReviewModel,
  path: string
): Map<string, 'kept' | 'done'> {
  const calls = new Map<string, IReviewChange[]>();
  for (const change of model.changesOf(path)) {
    calls.set(change.callId, [...(calls.get(change.callId) ?? []), change]);
  }
  const states = new Map<string, 'kept' | 'done'>();
  for (const [callId, changes] of calls) {
    if (changes.every(c => c.state !== 'pending')) {
      states.set(
        callId,
        changes.some(c => c.state === 'undone') ? 'done' : 'kept'
      );
    }
  }
  return states;
}

function openCells(
  tracker: INotebookTracker,
  path: string
): IOpenCell[] | null {
  const panel = tracker.find(
    widget => widget.context.path === path && widget.context.isReady
  );
  const model = panel?.content.model;
  if (!model) {
    return null;
  }
  const cells: IOpenCell[] = [];
  for (let i = 0; i < model.cells.length; i++) {
    const cell = model.cells.get(i);
    cells.push({ id: cell.id, source: cell.sharedModel.getSource() });
  }
  return cells;
}
