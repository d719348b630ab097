/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * Undo of an agent call in a collaboration room: `POST api/xcsh/notebook/undo`
 * (docs/developers/contract.md §4.3).
 *
 * In a room the server holds, per agent call, a Yjs undo of exactly that
 * call's transaction: undoing it keeps what people typed afterwards, in the
 * same cell too. When no open room holds the call (no room, the room was
 * closed, the server restarted, the call is too old) the answer says
 * `not-held` and the review falls back to its guarded undo.
 */

import { ServerConnection } from '@jupyterlab/services';

import type { components } from '../restapi.generated';
import { requestAPI, XcshResponseError } from '../request';

/**
 * The body of an undo: the notebook, the call's `callId` and, for one cell
 * of it, the cell's id.
 */
export type IRoomUndoRequest = components['schemas']['NotebookUndoRequest'];

/**
 * What an undo did: the ids of the cells whose change by the call was undone.
 */
export type IRoomUndoResult = components['schemas']['NotebookUndoResult'];

/**
 * The outcome of {@link undoInRoom}: undone, not held by any open room (fall
 * back to the guarded undo), or undone already.
 */
export type RoomUndoOutcome =
  | { kind: 'undone'; result: IRoomUndoResult }
  | { kind: 'not-held'; message: string }
  | { kind: 'already-undone'; message: string };

/**
 * Undo one agent call's change to a notebook's collaboration room, or its
 * change to one cell.
 *
 * @param path - The notebook's path (as the call's event names it).
 * @param callId - The `callId` of the notebook call's event.
 * @param cellId - One cell of the call, or null for the whole call.
 * @param settings - The server settings.
 * @returns `undone` with the server's answer; `not-held` when no open room
 *   holds the call (the caller then reverts the file itself); `already-undone`.
 *
 * @throws {XcshResponseError} For any other error (a bad request, a refusal).
 */
export async function undoInRoom(
  path: string,
  callId: string,
  cellId: string | null,
  settings: ServerConnection.ISettings
): Promise<RoomUndoOutcome> {
  const body: IRoomUndoRequest = { path, call_id: callId, cell_id: cellId };
  try {
    const response = await requestAPI(
      'notebook/undo',
      { method: 'POST', body: JSON.stringify(body) },
      settings
    );
    return {
      kind: 'undone',
      result: (await response.json()) as IRoomUndoResult
    };
  } catch (error) {
    if (error instanceof XcshResponseError) {
      const status = error.response.status;
      if (status === 404 && error.reason === 'not-held') {
        return { kind: 'not-held', message: error.message };
      }
      if (status === 409 && error.reason === 'already-undone') {
        return { kind: 'already-undone', message: error.message };
      }
    }
    throw error;
  }
}
