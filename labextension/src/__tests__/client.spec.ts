/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { ServerConnection } from '@jupyterlab/services';

import {
  answerInput,
  followRun,
  runProgress,
  getArtifact,
  INotebookBatchResult,
  INotebookEditResult,
  INotebookFindResult,
  interruptCall,
  interruptSession,
  IPythonResult,
  ISessionModel,
  listSessions,
  notebook,
  runPython,
  shutdownSession,
  XcshClient
} from '../client';
import { XcshResponseError } from '../request';

const BASE_URL = 'http://localhost:8888/lab/';

/**
 * A fetch double: records each request and answers with the next response.
 */
function mockFetch(...responses: Response[]): jest.Mock {
  const fetch = jest.fn();
  for (const response of responses) {
    fetch.mockResolvedValueOnce(response);
  }
  return fetch;
}

function settingsWith(fetch: jest.Mock): ServerConnection.ISettings {
  return ServerConnection.makeSettings({
    baseUrl: BASE_URL,
    token: 'secret',
    fetch: fetch as unknown as typeof window.fetch
  });
}

function jsonResponse(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json' }
  });
}

/**
 * The single request the fetch double received.
 */
function sentRequest(fetch: jest.Mock): Request {
  expect(fetch).toHaveBeenCalledTimes(1);
  return fetch.mock.calls[0][0] as Request;
}

/**
 * The url of the request, without the cache buster that
 * `ServerConnection.makeRequest` appends (its default cache is `no-store`).
 */
function sentUrl(fetch: jest.Mock): string {
  return sentRequest(fetch).url.replace(/[?&]\d+$/, '');
}

describe('notebook', () => {
  it('posts the request as JSON and returns the edit result', async () => {
    const result: INotebookEditResult = {
      callId: '0123456789abcdef0123456789abcdef',
      text: 'Replaced cell 2 (code). Notebook now has 5 cells.',
      details: {
        action: 'edit',
        cellIndex: 2,
        cellType: 'code',
        totalCells: 5,
        cellSource: ['x = 1\n', 'y = 2'],
        cellId: 'abc',
        sourceHash: '0123456789abcdef',
        revision: 'fedcba9876543210',
        via: 'file'
      }
    };
    const fetch = mockFetch(jsonResponse(result));

    const answer = await notebook(
      {
        action: 'edit',
        notebook_path: 'dir/a.ipynb',
        cell_index: 2,
        content: 'x = 1\ny = 2'
      },
      settingsWith(fetch)
    );

    expect(answer).toEqual(result);
    const request = sentRequest(fetch);
    expect(request.method).toBe('POST');
    expect(sentUrl(fetch)).toBe(`${BASE_URL}api/xcsh/notebook`);
    expect(request.headers.get('Authorization')).toBe('token secret');
    expect(request.headers.get('Content-Type')).toBe('application/json');
    expect(await request.json()).toEqual({
      action: 'edit',
      notebook_path: 'dir/a.ipynb',
      cell_index: 2,
      content: 'x = 1\ny = 2'
    });
  });

  it('throws a ResponseError carrying the server message', async () => {
    const fetch = mockFetch(
      jsonResponse({ message: 'Notebook not found: nope.ipynb' }, 404)
    );

    const call = notebook(
      { action: 'read', notebook_path: 'nope.ipynb' },
      settingsWith(fetch)
    );

    await expect(call).rejects.toBeInstanceOf(ServerConnection.ResponseError);
    await expect(call).rejects.toMatchObject({
      message: 'Notebook not found: nope.ipynb',
      reason: null,
      response: { status: 404 }
    });
  });

  it('keeps the reason and details of a refusal', async () => {
    const details = { cellIndex: 1, sourceHash: '0123456789abcdef' };
    const fetch = mockFetch(
      jsonResponse(
        { message: 'Cell 1 changed', reason: 'stale_cell', details },
        409
      )
    );

    const call = notebook(
      { action: 'delete', notebook_path: 'a.ipynb', cell_index: 1 },
      settingsWith(fetch)
    );

    await expect(call).rejects.toBeInstanceOf(XcshResponseError);
    await expect(call).rejects.toMatchObject({
      message: 'Cell 1 changed',
      reason: 'stale_cell',
      details,
      response: { status: 409 }
    });
  });

  it('says what status came back when the body is not JSON', async () => {
    const fetch = mockFetch(
      new Response('<html>Bad gateway</html>', {
        status: 502,
        statusText: 'Bad Gateway'
      })
    );

    const call = notebook(
      { action: 'read', notebook_path: 'a.ipynb' },
      settingsWith(fetch)
    );

    await expect(call).rejects.toMatchObject({
      message: 'Invalid response: 502 Bad Gateway',
      reason: null
    });
  });

  it('turns a fetch failure into a NetworkError', async () => {
    const fetch = jest.fn().mockRejectedValue(new TypeError('offline'));

    const call = notebook(
      { action: 'read', notebook_path: 'a.ipynb' },
      settingsWith(fetch)
    );

    await expect(call).rejects.toBeInstanceOf(ServerConnection.NetworkError);
  });
});

describe('notebook: anchors, batches and find (docs/developers/contract.md §2.2, §2.10, §2.11)', () => {
  it('posts a batch of anchored changes and returns each change', async () => {
    const result: INotebookBatchResult = {
      callId: '0123456789abcdef0123456789abcdef',
      text: 'Replaced cell 1 (code).\nInserted markdown cell at position 2. Notebook now has 5 cells.',
      details: {
        action: 'batch',
        totalCells: 5,
        revision: 'fedcba9876543210',
        via: 'file',
        changes: [
          {
            action: 'edit',
            cellIndex: 1,
            cellType: 'code',
            totalCells: 4,
            cellSource: ['x = 10'],
            cellId: 'c1',
            sourceHash: '0123456789abcdef',
            revision: 'aaaaaaaaaaaaaaaa'
          },
          {
            action: 'insert',
            cellIndex: 2,
            cellType: 'markdown',
            totalCells: 5,
            cellSource: ['## About x'],
            cellId: 'n1',
            sourceHash: 'bbbbbbbbbbbbbbbb',
            revision: 'fedcba9876543210'
          }
        ]
      }
    };
    const fetch = mockFetch(jsonResponse(result));
    const request = {
      notebook_path: 'a.ipynb',
      expected_revision: '9999999999999999',
      changes: [
        { action: 'edit' as const, cell_id: 'c1', content: 'x = 10' },
        {
          action: 'insert' as const,
          after_cell_id: 'c1',
          content: '## About x',
          cell_type: 'markdown' as const
        }
      ]
    };

    expect(await notebook(request, settingsWith(fetch))).toEqual(result);
    const sent = sentRequest(fetch);
    expect(sent.method).toBe('POST');
    expect(await sent.json()).toEqual(request);
  });

  it('posts a find and returns the matching cells', async () => {
    const result: INotebookFindResult = {
      callId: '0123456789abcdef0123456789abcdef',
      text: 'Found "df_clean =" in 1 cell (1 line) of a.ipynb.\n--- cell 3 · code · id c3 ---\n2: df_clean = df.dropna()',
      details: {
        action: 'find',
        pattern: 'df_clean =',
        regex: false,
        cellType: null,
        totalCells: 9,
        startIndex: 0,
        endIndex: 9,
        truncated: false,
        matchedCells: 1,
        matchedLines: 1,
        matches: [
          {
            index: 3,
            cellId: 'c3',
            cellType: 'code',
            sourceHash: '0123456789abcdef',
            matchCount: 1,
            lines: [{ line: 2, text: 'df_clean = df.dropna()' }]
          }
        ],
        revision: 'fedcba9876543210',
        via: 'file'
      }
    };
    const fetch = mockFetch(jsonResponse(result));

    const found = await notebook(
      { action: 'find', notebook_path: 'a.ipynb', pattern: 'df_clean =' },
      settingsWith(fetch)
    );

    expect(found).toEqual(result);
    expect(await sentRequest(fetch).json()).toEqual({
      action: 'find',
      notebook_path: 'a.ipynb',
      pattern: 'df_clean ='
    });
  });
});

describe('getArtifact', () => {
  it('gets the text of an encoded id with the range as query', async () => {
    const fetch = mockFetch(new Response('line 1\nline 2\n'));

    const text = await getArtifact('run 1/x', settingsWith(fetch), {
      offset: 10,
      limit: 20
    });

    expect(text).toBe('line 1\nline 2\n');
    const request = sentRequest(fetch);
    expect(request.method).toBe('GET');
    expect(sentUrl(fetch)).toBe(
      `${BASE_URL}api/xcsh/artifacts/run%201%2Fx?offset=10&limit=20`
    );
  });

  it('sends no query without a range', async () => {
    const fetch = mockFetch(new Response(''));

    await getArtifact('abc', settingsWith(fetch));

    expect(sentUrl(fetch)).toBe(`${BASE_URL}api/xcsh/artifacts/abc`);
  });
});

describe('runPython', () => {
  it('posts the cells and returns the result', async () => {
    const result: IPythonResult = {
      text: '3\n',
      isError: false,
      cancelled: false,
      timedOut: false,
      stdinRequested: false,
      cells: [
        {
          index: 0,
          title: 'add',
          status: 'complete',
          output: '3\n',
          exitCode: 0,
          durationMs: 12,
          statusEvents: []
        }
      ],
      images: [],
      jsonOutputs: [],
      statusEvents: [],
      truncated: false,
      totalLines: 1,
      totalBytes: 2,
      outputLines: 1,
      outputBytes: 2,
      session: { name: 'default', cwd: '', kernelId: 'k1', restartCount: 0 },
      callId: '0123456789abcdef0123456789abcdef'
    };
    const fetch = mockFetch(jsonResponse(result));

    const answer = await runPython(
      { cells: [{ code: 'print(1 + 2)', title: 'add' }], timeout: 5 },
      settingsWith(fetch)
    );

    expect(answer).toEqual(result);
    const request = sentRequest(fetch);
    expect(request.method).toBe('POST');
    expect(sentUrl(fetch)).toBe(`${BASE_URL}api/xcsh/python`);
    expect(await request.json()).toEqual({
      cells: [{ code: 'print(1 + 2)', title: 'add' }],
      timeout: 5
    });
  });
});

describe('runs waiting for input', () => {
  const RUN = '0123456789abcdef0123456789abcdef';

  it('answers a prompt with POST and returns what the call returns next', async () => {
    const result = { text: 'name? bob\nhello bob', isError: false };
    const fetch = mockFetch(jsonResponse(result));

    const answer = await answerInput(RUN, 'bob', settingsWith(fetch));

    expect(answer).toEqual(result);
    const request = sentRequest(fetch);
    expect(request.method).toBe('POST');
    expect(sentUrl(fetch)).toBe(`${BASE_URL}api/xcsh/runs/${RUN}/input`);
    expect(await request.json()).toEqual({ value: 'bob' });
  });

  it('follows a run with GET', async () => {
    const fetch = mockFetch(jsonResponse({ text: 'name? ' }));

    await followRun(RUN, settingsWith(fetch));

    expect(sentRequest(fetch).method).toBe('GET');
    expect(sentUrl(fetch)).toBe(`${BASE_URL}api/xcsh/runs/${RUN}`);
  });

  it('reads the events after a cursor with GET ?after=', async () => {
    const body = {
      runId: RUN,
      state: 'running',
      after: 3,
      next: 5,
      skipped: 0,
      events: []
    };
    const fetch = mockFetch(jsonResponse(body));

    expect(await runProgress(RUN, 3, settingsWith(fetch))).toEqual(body);
    expect(sentRequest(fetch).method).toBe('GET');
    expect(sentUrl(fetch)).toBe(`${BASE_URL}api/xcsh/runs/${RUN}?after=3`);
  });

  it('turns a run no longer waiting into a ResponseError', async () => {
    const body = { message: `Run ${RUN} is not waiting for input` };
    const fetch = mockFetch(jsonResponse(body, 409));

    await expect(answerInput(RUN, 'x', settingsWith(fetch))).rejects.toThrow(
      body.message
    );
  });
});

describe('sessions', () => {
  it('lists the sessions the server wraps in an object', async () => {
    const sessions: ISessionModel[] = [
      {
        name: 'default',
        cwd: '',
        kernelId: 'k1',
        kernelName: 'python3',
        busy: false,
        queueLength: 0,
        lastUsed: 1704067200.5,
        restartCount: 0,
        generation: 1,
        dead: false
      }
    ];
    const fetch = mockFetch(jsonResponse({ sessions }));

    expect(await listSessions(settingsWith(fetch))).toEqual(sessions);
    expect(sentUrl(fetch)).toBe(`${BASE_URL}api/xcsh/sessions`);
  });

  it('shuts a session down with DELETE', async () => {
    const fetch = mockFetch(new Response(null, { status: 204 }));

    await shutdownSession('my session', settingsWith(fetch));

    const request = sentRequest(fetch);
    expect(request.method).toBe('DELETE');
    expect(sentUrl(fetch)).toBe(`${BASE_URL}api/xcsh/sessions/my%20session`);
  });

  it('interrupts a session with POST', async () => {
    const fetch = mockFetch(jsonResponse({ interrupted: true }));

    expect(await interruptSession('default', settingsWith(fetch))).toEqual({
      interrupted: true
    });

    const request = sentRequest(fetch);
    expect(request.method).toBe('POST');
    expect(sentUrl(fetch)).toBe(
      `${BASE_URL}api/xcsh/sessions/default/interrupt`
    );
  });

  it('interrupts one call with POST', async () => {
    const fetch = mockFetch(jsonResponse({ interrupted: false }));

    expect(await interruptCall('abc123', settingsWith(fetch))).toEqual({
      interrupted: false
    });

    const request = sentRequest(fetch);
    expect(request.method).toBe('POST');
    expect(sentUrl(fetch)).toBe(`${BASE_URL}api/xcsh/calls/abc123/interrupt`);
  });
});

describe('XcshClient', () => {
  it('calls the endpoints of its own server', async () => {
    const fetch = mockFetch(jsonResponse({ sessions: [] }));
    const client = new XcshClient({ serverSettings: settingsWith(fetch) });

    expect(await client.listSessions()).toEqual([]);

    expect(sentUrl(fetch)).toBe(`${BASE_URL}api/xcsh/sessions`);
  });
});
