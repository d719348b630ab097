/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  Limits,
  NOTEBOOK_SCHEMA_ID,
  parseEmission,
  PYTHON_SCHEMA_ID
} from '../core/events';
import { terminalText } from '../core/terminal';

function notebookEmission(fields: Record<string, unknown> = {}) {
  return {
    schema_id: NOTEBOOK_SCHEMA_ID,
    callId: 'n1',
    action: 'edit',
    path: 'dir/a.ipynb',
    status: 'ok',
    cellIndex: 2,
    cellType: 'code',
    source: 'x = 1',
    totalCells: 5,
    ...fields
  };
}

function pythonEmission(fields: Record<string, unknown>) {
  return { schema_id: PYTHON_SCHEMA_ID, callId: 'p1', ...fields };
}

describe('parseEmission', () => {
  it('reads a notebook call with every field', () => {
    const previousCell = {
      cell_type: 'code',
      id: 'c2',
      metadata: {},
      outputs: [],
      execution_count: null,
      source: 'x = 0'
    };
    const event = parseEmission(
      notebookEmission({
        __timestamp__: '2024-05-01T10:00:00.000Z',
        sourceHash: '0123456789abcdef',
        revision: 'fedcba9876543210',
        previousCell,
        agent: 'claude-code',
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
      })
    );
    expect(event).toEqual({
      kind: 'notebook',
      callId: 'n1',
      time: Date.parse('2024-05-01T10:00:00.000Z'),
      action: 'edit',
      path: 'dir/a.ipynb',
      status: 'ok',
      cellIndex: 2,
      fromIndex: null,
      cellId: null,
      cellType: 'code',
      source: 'x = 1',
      totalCells: 5,
      lastModified: null,
      error: null,
      sourceHash: '0123456789abcdef',
      revision: 'fedcba9876543210',
      previousCell,
      previousCellArtifactId: null,
      restored: false,
      changes: null,
      agent: 'claude-code',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    });
  });

  it('reads a batch as one call listing its changes in order', () => {
    const event = parseEmission(
      notebookEmission({
        action: 'batch',
        cellIndex: null,
        cellType: null,
        source: null,
        revision: 'fedcba9876543210',
        changes: [
          {
            action: 'edit',
            cellIndex: 1,
            cellId: 'c1',
            cellType: 'code',
            source: 'x = 10',
            sourceHash: '0123456789abcdef',
            revision: 'aaaaaaaaaaaaaaaa',
            previousCell: { cell_type: 'code', id: 'c1', source: 'x = 1' }
          },
          'not a change',
          { cellIndex: 3 },
          { action: 'move', cellIndex: 0, fromIndex: 4, cellId: 'c3' }
        ]
      })
    );
    expect(event).toMatchObject({ action: 'batch', cellIndex: null });
    if (event?.kind !== 'notebook') {
      throw new Error('not a notebook event');
    }
    expect(event.changes).toEqual([
      {
        action: 'edit',
        cellIndex: 1,
        fromIndex: null,
        cellId: 'c1',
        cellType: 'code',
        source: 'x = 10',
        sourceHash: '0123456789abcdef',
        revision: 'aaaaaaaaaaaaaaaa',
        previousCell: { cell_type: 'code', id: 'c1', source: 'x = 1' },
        previousCellArtifactId: null,
        restored: false
      },
      {
        action: 'move',
        cellIndex: 0,
        fromIndex: 4,
        cellId: 'c3',
        cellType: null,
        source: null,
        sourceHash: null,
        revision: null,
        previousCell: null,
        previousCellArtifactId: null,
        restored: false
      }
    ]);
  });

  it("keeps at most its bound of a batch's changes, and none for other calls", () => {
    const many = Array.from({ length: Limits.MAX_CHANGES + 5 }, (_, k) => ({
      action: 'insert',
      cellIndex: k
    }));
    const batch = parseEmission(
      notebookEmission({ action: 'batch', changes: many })
    );
    expect(batch?.kind === 'notebook' && batch.changes?.length).toBe(
      Limits.MAX_CHANGES
    );
    expect(
      parseEmission(notebookEmission({ action: 'batch', changes: 'x' }))
    ).toMatchObject({ changes: [] });
    expect(parseEmission(notebookEmission({ changes: many }))).toMatchObject({
      changes: null
    });
  });

  it('keeps what a revert needs only when it has the right form', () => {
    const event = parseEmission(
      notebookEmission({
        previousCell: { source: 'no cell_type' },
        previousCellArtifactId: '20250101T120000-0123456789ab',
        restored: 'yes'
      })
    );
    expect(event).toMatchObject({
      previousCell: null,
      previousCellArtifactId: '20250101T120000-0123456789ab',
      restored: false
    });
    const huge = { cell_type: 'code', source: 'x'.repeat(200 * 1024) };
    expect(
      parseEmission(notebookEmission({ previousCell: huge }))
    ).toMatchObject({ previousCell: null });
  });

  it('ignores emissions of other schemas and non-objects', () => {
    for (const emission of [
      null,
      undefined,
      42,
      'text',
      [],
      {
        schema_id:
          'https://events.jupyter.org/jupyter_server/contents_service/v1'
      },
      { ...notebookEmission(), schema_id: `${NOTEBOOK_SCHEMA_ID}x` }
    ]) {
      expect(parseEmission(emission)).toBeNull();
    }
  });

  it('ignores a notebook call without its essential fields', () => {
    expect(parseEmission(notebookEmission({ callId: 7 }))).toBeNull();
    expect(parseEmission(notebookEmission({ callId: '' }))).toBeNull();
    expect(parseEmission(notebookEmission({ path: null }))).toBeNull();
    expect(parseEmission(notebookEmission({ status: 'fine' }))).toBeNull();
  });

  it('drops optional fields of the wrong type instead of the event', () => {
    const event = parseEmission(
      notebookEmission({
        cellIndex: '2',
        cellType: 3,
        source: ['x'],
        totalCells: -1,
        error: { message: 'x' },
        __timestamp__: 'not a date'
      })
    );
    expect(event).toMatchObject({
      cellIndex: null,
      cellType: null,
      source: null,
      totalCells: null,
      error: null
    });
    expect(Number.isFinite(event!.time)).toBe(true);
  });

  it('rejects fractional and huge cell indices', () => {
    expect(parseEmission(notebookEmission({ cellIndex: 1.5 }))).toMatchObject({
      cellIndex: null
    });
    expect(
      parseEmission(
        pythonEmission({ event: 'cell', cellIndex: 1e9, status: 'running' })
      )
    ).toBeNull();
  });

  it('cuts long strings', () => {
    const event = parseEmission(
      notebookEmission({ source: 'x'.repeat(Limits.SOURCE_CHARS + 10) })
    );
    expect(event).toMatchObject({ source: 'x'.repeat(Limits.SOURCE_CHARS) });
  });

  it('reads the cells of a started python call, skipping malformed ones', () => {
    const event = parseEmission(
      pythonEmission({
        event: 'started',
        session: 'agent',
        cells: [
          { index: 0, title: 'load', code: 'x = 1' },
          'junk',
          { index: 2, title: 5, code: null },
          null
        ]
      })
    );
    expect(event).toMatchObject({
      kind: 'python',
      event: 'started',
      session: 'agent',
      cells: [
        { index: 0, title: 'load', code: 'x = 1' },
        { index: 2, title: '', code: '' }
      ]
    });
  });

  it('reads a started call whose cells are not a list as having none', () => {
    expect(
      parseEmission(pythonEmission({ event: 'started', cells: 'x' }))
    ).toMatchObject({ cells: [] });
  });

  it('needs a known status for a cell event', () => {
    expect(
      parseEmission(
        pythonEmission({ event: 'cell', cellIndex: 0, status: 'done' })
      )
    ).toBeNull();
    expect(
      parseEmission(
        pythonEmission({ event: 'cell', cellIndex: 0, status: 'complete' })
      )
    ).toMatchObject({ event: 'cell', cellIndex: 0, status: 'complete' });
  });

  it('keeps the tail of an oversized chunk', () => {
    const text = 'a'.repeat(10) + 'b'.repeat(Limits.TAIL_CHARS);
    const event = parseEmission(
      pythonEmission({ event: 'chunk', cellIndex: 0, text })
    );
    expect(event).toMatchObject({ text: 'b'.repeat(Limits.TAIL_CHARS) });
    expect(
      parseEmission(pythonEmission({ event: 'chunk', cellIndex: 0, text: 3 }))
    ).toBeNull();
  });

  it('keeps the size of an image and where it is kept whole', () => {
    const event = parseEmission(
      pythonEmission({
        event: 'display',
        cellIndex: 0,
        display: {
          kind: 'image',
          mimeType: 'image/png',
          bytes: 3000000,
          width: 4000,
          height: 3000,
          artifactId: '20260101T000000-0123456789ab',
          artifactPath:
            '.xcsh-artifacts/20260101T000000-0123456789ab.python.png'
        }
      })
    );
    expect(event).toMatchObject({
      display: {
        data: null,
        width: 4000,
        height: 3000,
        artifactPath: '.xcsh-artifacts/20260101T000000-0123456789ab.python.png'
      }
    });
  });

  it('parses prompts waiting for an answer, and their end', () => {
    const runId = 'ab'.repeat(16);
    const waiting = parseEmission(
      pythonEmission({
        event: 'input',
        cellIndex: 1,
        input: {
          runId,
          prompt: 'name? \x1b[1m',
          password: false,
          state: 'waiting'
        }
      })
    );
    expect(waiting).toMatchObject({
      event: 'input',
      cellIndex: 1,
      input: { runId, prompt: 'name? ', password: false, state: 'waiting' }
    });
    const answered = parseEmission(
      pythonEmission({ event: 'input', input: { state: 'answered' } })
    );
    expect(answered).toMatchObject({
      cellIndex: null,
      input: { state: 'answered', runId: null }
    });
    // A waiting prompt with nowhere to answer, or an unknown state, is dropped.
    for (const input of [
      { state: 'waiting', prompt: 'x' },
      { state: 'waiting', runId: '../../x' },
      { state: 'asleep' },
      'waiting'
    ]) {
      expect(
        parseEmission(pythonEmission({ event: 'input', input }))
      ).toBeNull();
    }
  });

  it('shows only raster images with base64 data', () => {
    const png = parseEmission(
      pythonEmission({
        event: 'display',
        cellIndex: 0,
        display: {
          kind: 'image',
          mimeType: 'image/png',
          data: 'iVBORw0K\nGgo=',
          bytes: 8
        }
      })
    );
    expect(png).toMatchObject({
      display: {
        kind: 'image',
        mimeType: 'image/png',
        data: 'iVBORw0KGgo=',
        bytes: 8
      }
    });
    const svg = parseEmission(
      pythonEmission({
        event: 'display',
        cellIndex: 0,
        display: { kind: 'image', mimeType: 'image/svg+xml', data: 'PHN2Zz4=' }
      })
    );
    expect(svg).toMatchObject({ display: { kind: 'image', data: null } });
    const injected = parseEmission(
      pythonEmission({
        event: 'display',
        cellIndex: 0,
        display: { kind: 'image', mimeType: 'image/png', data: '"><script>' }
      })
    );
    expect(injected).toMatchObject({ display: { data: null } });
  });

  it('ignores unknown python events and display kinds', () => {
    expect(parseEmission(pythonEmission({ event: 'exploded' }))).toBeNull();
    expect(
      parseEmission(
        pythonEmission({ event: 'display', display: { kind: 'video' } })
      )
    ).toBeNull();
    expect(
      parseEmission(pythonEmission({ event: 'display', display: 'x' }))
    ).toBeNull();
  });

  it('reads a finished call and defaults a malformed result', () => {
    const event = parseEmission(
      pythonEmission({
        event: 'finished',
        result: {
          text: 'done',
          isError: false,
          truncated: true,
          totalLines: 10,
          totalBytes: 200000,
          artifactId: 'abc',
          artifactPath: '.xcsh-artifacts/abc.python.log',
          durationMs: 12.5,
          cells: [
            { index: 0, status: 'complete', durationMs: 5, exitCode: 0 },
            'x'
          ]
        }
      })
    );
    expect(event).toMatchObject({
      event: 'finished',
      result: {
        text: 'done',
        isError: false,
        cancelled: false,
        truncated: true,
        artifactPath: '.xcsh-artifacts/abc.python.log',
        cells: [{ index: 0, status: 'complete', durationMs: 5, exitCode: 0 }]
      }
    });
    expect(
      parseEmission(pythonEmission({ event: 'finished', result: 'boom' }))
    ).toMatchObject({
      result: { text: '', isError: false, truncated: false, cells: [] }
    });
  });

  it('never throws, even on objects whose fields throw', () => {
    const hostile = {
      schema_id: PYTHON_SCHEMA_ID,
      get callId(): string {
        throw new Error('no');
      }
    };
    expect(parseEmission(hostile)).toBeNull();
  });
});

describe('terminalText', () => {
  it('removes colours and other escape sequences', () => {
    expect(
      terminalText('\x1b[31mKeyboardInterrupt\x1b[39m: \x1b]0;title\x07done')
    ).toBe('KeyboardInterrupt: done');
  });

  it('lets a carriage return overwrite its line, like a terminal', () => {
    expect(terminalText('10%\r50%\r100%\nnext\r\n')).toBe('100%\nnext\n');
  });

  it('drops control characters but keeps tabs and newlines', () => {
    expect(terminalText('a\x00b\x07\tc\x7f\x85\nd')).toBe('ab\tc\nd');
  });

  it('is applied to output tails and result texts', () => {
    expect(
      parseEmission(
        pythonEmission({
          event: 'chunk',
          cellIndex: 0,
          text: '\x1b[1mhi\x1b[0m'
        })
      )
    ).toMatchObject({ text: 'hi' });
    expect(
      parseEmission(
        pythonEmission({ event: 'finished', result: { text: '\x1b[31mboom' } })
      )
    ).toMatchObject({ result: { text: 'boom' } });
  });
});
