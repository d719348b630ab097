/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { ITranslator, TranslationBundle } from '@jupyterlab/translation';

import type { INotebookCell } from '../client';
import { XcshResponseError } from '../request';
import type { ICellMarks, IXcshClient } from '../tokens';
import { translationBundle } from '../translation';
import type { INotebookCallEvent, INotebookChangeEvent } from './events';
import type { ActivityModel, INotebookCall } from './model';
import {
  IOpenCell,
  parseCellArtifact,
  refusalMessage,
  revertRequest,
  revertUnavailable,
  staleInOpenNotebook
} from './revert';

/**
 * Reverts notebook changes from the activity panel, through the notebook
 * tool, and records how each revert went in the activity model.
 */
export class Reverter {
  /**
   * Create a reverter.
   */
  constructor(options: Reverter.IOptions) {
    this._client = options.client;
    this._model = options.model;
    this._marks = options.marks ?? null;
    this._openCells = options.openCells ?? (() => null);
    this._trans = translationBundle(options.translator);
  }

  /**
   * Revert a call: put the cell(s) back as they were before it, unless
   * someone changed them since (then the call's revert status says why).
   */
  async revert(call: INotebookCall): Promise<void> {
    const state = call.revert.state;
    if (state === 'pending' || state === 'done') {
      return;
    }
    const model = this._model;
    const event = call.event;
    const trans = this._trans;
    model.setRevert(call.id, { state: 'pending' });
    try {
      const unavailable = revertUnavailable(event, trans);
      if (unavailable !== null) {
        model.setRevert(call.id, { state: 'failed', message: unavailable });
        return;
      }
      const previous = await this._previousCell(call);
      const open = this._openCells(event.path);
      const stale =
        open === null ? null : staleInOpenNotebook(event, open, trans);
      if (stale !== null) {
        model.setRevert(call.id, {
          state: 'refused',
          message: trans.__('Not reverted: %1', stale),
          detail: trans.__('Undo that change first, or keep it.')
        });
        return;
      }
      const result = await this._client.notebook(
        revertRequest(event, previous)
      );
      // The revert is the person's change, not an agent's: no mark for it,
      // and the marks of the change it undid go.
      this._marks?.ignoreCall(result.callId);
      this._marks?.removeCall(call.id);
      model.linkRevert(result.callId, call.id);
      model.setRevert(call.id, { state: 'done', by: result.callId });
    } catch (error) {
      model.setRevert(call.id, failure(error, trans));
    }
  }

  /**
   * The cell as it was before an edit or a delete (for a batch, before each
   * of its changes): from the event, or from the artifact the server kept it
   * in when it was too large for the event.
   */
  private _previousCell(
    call: INotebookCall
  ): Promise<INotebookCell | null | (INotebookCell | null)[]> {
    const event = call.event;
    if (event.changes !== null) {
      return this._cellsBefore(event.changes);
    }
    return this._cellBefore(event);
  }

  private async _cellsBefore(
    changes: readonly INotebookChangeEvent[]
  ): Promise<(INotebookCell | null)[]> {
    const cells: (INotebookCell | null)[] = [];
    for (const change of changes) {
      cells.push(await this._cellBefore(change));
    }
    return cells;
  }

  private _cellBefore(
    change: INotebookCallEvent | INotebookChangeEvent
  ): Promise<INotebookCell | null> {
    return cellBefore(change, this._client, this._trans);
  }

  private _client: IXcshClient;
  private _model: ActivityModel;
  private _marks: ICellMarks | null;
  private _openCells: (path: string) => IOpenCell[] | null;
  private _trans: TranslationBundle;
}

/**
 * The namespace for {@link Reverter} statics.
 */
export namespace Reverter {
  /**
   * The options of a reverter.
   */
  export interface IOptions {
    /** The server's API. */
    client: IXcshClient;
    /** Where the revert status of each call is kept. */
    model: ActivityModel;
    /** The marks of agent-changed cells, cleared for reverted changes. */
    marks?: ICellMarks | null;
    /**
     * The cells of the notebook at `path` as open in the lab, or `null` when
     * it is not open.
     */
    openCells?: (path: string) => IOpenCell[] | null;
    /** The lab's translator, for what the panel says of a revert. */
    translator?: ITranslator | null;
  }
}

/**
 * The revert status for an error: a 409 is a refusal (nothing changed), the
 * rest a failure.
 */
function failure(
  error: unknown,
  trans: TranslationBundle
):
  | { state: 'refused'; message: string; detail: string | null }
  | { state: 'failed'; message: string } {
  if (error instanceof XcshResponseError && error.response.status === 409) {
    return {
      state: 'refused',
      message: refusalMessage(error.reason, trans),
      detail: error.message
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { state: 'failed', message: trans.__('Revert failed: %1', message) };
}

/**
 * The whole cell an edit or a delete changed, as it was before (from the event, or from the
 * artifact it was kept in when too large for it); `null` for the other actions.
 */
export async function cellBefore(
  change: INotebookCallEvent | INotebookChangeEvent,
  client: Pick<IXcshClient, 'getArtifact'>,
  trans: TranslationBundle
): Promise<INotebookCell | null> {
  if (change.action !== 'edit' && change.action !== 'delete') {
    return null;
  }
  if (change.previousCell !== null) {
    return change.previousCell as unknown as INotebookCell;
  }
  const text = await client.getArtifact(change.previousCellArtifactId ?? '');
  const cell = parseCellArtifact(text);
  if (cell === null) {
    throw new Error(trans.__('The kept cell could not be read.'));
  }
  return cell;
}
