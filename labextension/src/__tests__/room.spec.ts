/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { ServerConnection } from '@jupyterlab/services';

import { undoInRoom } from '../review/room';
import { RoomUndoer, roomUndo } from '../review/undo';
import { XcshResponseError } from '../request';

const BASE_URL = 'http://localhost:8888/lab/';
const CALL = '0123456789abcdef0123456789abcdef';

function settingsAnswering(
  status: number,
  body: unknown
): {
  settings: ServerConnection.ISettings;
  fetch: jest.Mock;
} {
  const fetch = jest.fn().mockResolvedValueOnce(
    new Response(JSON.stringify(body), {
      status,
      headers: { 'Content-Type': 'application/json' }
    })
  );
  const settings = ServerConnection.makeSettings({
    baseUrl: BASE_URL,
    token: 'secret',
    fetch: fetch as unknown as typeof window.fetch
  });
  return { settings, fetch };
}

describe('undoInRoom', () => {
  it('posts the call and cell and returns what was undone', async () => {
    const answer = {
      path: 'a.ipynb',
      callId: CALL,
      cellId: 'c1',
      undone: ['c1']
    };
    const { settings, fetch } = settingsAnswering(200, answer);
    const outcome = await undoInRoom('a.ipynb', CALL, 'c1', settings);
    expect(outcome).toEqual({ kind: 'undone', result: answer });
    const request = fetch.mock.calls[0][0] as Request;
    // (Without the cache buster `ServerConnection.makeRequest` appends.)
    expect(request.url.replace(/[?&]\d+$/, '')).toBe(
      `${BASE_URL}api/xcsh/notebook/undo`
    );
    expect(request.method).toBe('POST');
    expect(await request.json()).toEqual({
      path: 'a.ipynb',
      call_id: CALL,
      cell_id: 'c1'
    });
  });

  it('says not-held when no open room holds the call', async () => {
    const { settings } = settingsAnswering(404, {
      message: 'No open collaboration room of a.ipynb holds call',
      reason: 'not-held'
    });
    const outcome = await undoInRoom('a.ipynb', CALL, null, settings);
    expect(outcome.kind).toBe('not-held');
  });

  it('says already-undone on a second undo', async () => {
    const { settings } = settingsAnswering(409, {
      message: 'Call is already undone',
      reason: 'already-undone'
    });
    const outcome = await undoInRoom('a.ipynb', CALL, null, settings);
    expect(outcome).toEqual({
      kind: 'already-undone',
      message: 'Call is already undone'
    });
  });

  it('throws any other error', async () => {
    const { settings } = settingsAnswering(400, {
      message: 'call_id must be 32 lowercase hex digits',
      reason: null
    });
    await expect(
      undoInRoom('a.ipynb', 'x', null, settings)
    ).rejects.toBeInstanceOf(XcshResponseError);
  });
});

describe('roomUndo (the review undo chain first tries the room)', () => {
  const target = {
    path: 'a.ipynb',
    callId: CALL,
    cellId: 'c1',
    event: {} as never
  };

  it('is done, by no call of its own, when the room undid it', async () => {
    const { settings } = settingsAnswering(200, {
      path: 'a.ipynb',
      callId: CALL,
      cellId: 'c1',
      undone: ['c1']
    });
    expect(await roomUndo(target, settings)).toEqual({
      state: 'done',
      by: null
    });
  });

  it.each([
    [404, 'not-held'],
    [404, 'cell-not-changed'],
    [405, null]
  ])('falls back on %s (%s)', async (status, reason) => {
    const { settings } = settingsAnswering(status, {
      message: 'no',
      reason
    });
    expect(await roomUndo(target, settings)).toEqual({ state: 'fallback' });
  });

  it('is refused with the server message when already undone', async () => {
    const { settings } = settingsAnswering(409, {
      message: 'This call was undone already.',
      reason: 'already-undone'
    });
    expect(await roomUndo(target, settings)).toEqual({
      state: 'refused',
      message: 'Not undone: This call was undone already.'
    });
  });
});

describe('RoomUndoer picks the room only where the lab has the notebook in one', () => {
  const target = {
    path: 'a.ipynb',
    callId: CALL,
    cellId: null,
    event: {} as never
  };

  it('sends no request without a room: the guarded revert at once', async () => {
    const { settings, fetch } = settingsAnswering(404, {
      message: 'not held',
      reason: 'not-held'
    });
    const undoer = new RoomUndoer(settings, undefined, () => false);
    expect(await undoer.undo(target)).toEqual({ state: 'fallback' });
    expect(fetch).not.toHaveBeenCalled();
  });

  it('asks the room when the notebook is open in one', async () => {
    const { settings, fetch } = settingsAnswering(200, {
      path: 'a.ipynb',
      callId: CALL,
      cellId: null,
      undone: ['c1']
    });
    const seen: string[] = [];
    const undoer = new RoomUndoer(settings, undefined, path => {
      seen.push(path);
      return true;
    });
    expect(await undoer.undo(target)).toEqual({ state: 'done', by: null });
    expect(seen).toEqual(['a.ipynb']);
    expect(fetch).toHaveBeenCalledTimes(1);
  });
});
