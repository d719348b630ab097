/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { CommandRegistry } from '@lumino/commands';
import { Widget } from '@lumino/widgets';

import { addActivityCommands, commandActions } from '../panel/commands';

import { clipHead, clipTail, splitLines } from '../panel/collapse';
import { formatBytes } from '../core/format';
import { NOTEBOOK_SCHEMA_ID, PYTHON_SCHEMA_ID } from '../core/events';
import { ActivityModel, INotebookCall, IPythonCall } from '../core/activity';
import { renderJsonTree } from '../panel/renderjson';
import {
  notebookLine,
  notebookStatusLine,
  renderNotebookCall
} from '../panel/rendernotebook';
import { IRenderContext } from '../panel/renderparts';
import { renderPythonCall } from '../panel/renderpython';
import { ActivityPanel } from '../panel/widget';
import { h } from '../core/dom';
import { UNTRANSLATED } from '../translation';
import { choose, waitFor } from './helpers';

const lines = (n: number, prefix = 'line') =>
  Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}`).join('\n');

/**
 * A render context that records actions and keeps expanded state in a map.
 */
function fakeContext() {
  const open = new Map<string, boolean>();
  const actions = {
    openNotebook: jest.fn(),
    openArtifact: jest.fn(),
    interrupt: jest.fn(),
    answer: jest.fn(),
    undo: jest.fn(),
    keep: jest.fn()
  };
  const ctx: IRenderContext = {
    trans: UNTRANSLATED,
    isOpen: (key, byDefault = false) => open.get(key) ?? byDefault,
    toggle: (key, byDefault = false) =>
      open.set(key, !(open.get(key) ?? byDefault)),
    highlight: (code, language, element) => {
      element.textContent = code;
    },
    ...actions
  };
  return { ctx, open, actions };
}

function modelWith(...emissions: Record<string, unknown>[]): ActivityModel {
  const model = new ActivityModel();
  for (const emission of emissions) {
    model.handleEmission(emission);
  }
  return model;
}

function notebookEmission(fields: Record<string, unknown> = {}) {
  return {
    schema_id: NOTEBOOK_SCHEMA_ID,
    callId: 'n1',
    action: 'edit',
    path: 'dir/a.ipynb',
    status: 'ok',
    cellIndex: 3,
    cellType: 'markdown',
    source: '# Title',
    ...fields
  };
}

function py(fields: Record<string, unknown>) {
  return {
    schema_id: PYTHON_SCHEMA_ID,
    callId: 'p1',
    session: 'agent',
    ...fields
  };
}

function startedEmission(cells: { title?: string; code: string }[]) {
  return py({
    event: 'started',
    cells: cells.map((cell, index) => ({ index, title: '', ...cell }))
  });
}

function text(element: Element | null): string {
  return element?.textContent ?? '';
}

describe('collapsing rules', () => {
  it('counts lines without the final newline', () => {
    expect(splitLines('')).toEqual([]);
    expect(splitLines('a\n')).toEqual(['a']);
    expect(splitLines('a\n\nb')).toEqual(['a', '', 'b']);
  });

  it('keeps the head of code and the tail of output', () => {
    expect(clipHead(lines(8), 6)).toEqual({ text: lines(6), hidden: 2 });
    expect(clipTail(lines(12), 10)).toEqual({
      text: lines(12).split('\n').slice(2).join('\n'),
      hidden: 2
    });
    expect(clipHead('a\nb', 6)).toEqual({ text: 'a\nb', hidden: 0 });
  });

  it('formats sizes', () => {
    expect(formatBytes(200000)).toBe('195.3 KiB');
  });
});

describe('renderNotebookCall', () => {
  function call(fields: Record<string, unknown> = {}): INotebookCall {
    return modelWith(notebookEmission(fields)).calls[0] as INotebookCall;
  }

  it('shows the status line Notebook · action · path · cell · type', () => {
    expect(notebookStatusLine(call())).toBe(
      'Notebook · edit · dir/a.ipynb · cell 3 · markdown'
    );
    expect(notebookStatusLine(call({ action: 'move', fromIndex: 1 }))).toBe(
      'Notebook · move · dir/a.ipynb · cell 1 → 3 · markdown'
    );
  });

  it("shows on its line the target first: the file's name and the cell, then the action and the agent", () => {
    const { ctx } = fakeContext();
    const element = renderNotebookCall(call({ agent: 'claude-code' }), ctx);
    const title = element.querySelector<HTMLElement>('.jp-xcsh-CallTitle')!;
    expect(text(title)).toBe('a.ipynb · cell 3 · edit · claude-code');
    expect(text(title.querySelector('.jp-xcsh-CallTarget'))).toBe(
      'a.ipynb · cell 3'
    );
    expect(text(title.querySelector('.jp-xcsh-CallFile'))).toBe('a.ipynb');
    expect(text(title.querySelector('.jp-xcsh-CallTool'))).toBe(
      ' · edit · claude-code'
    );
    // The whole status line, the path and the cell type with it, on hover.
    expect(title.title).toBe(
      'claude-code · Notebook · edit · dir/a.ipynb · cell 3 · markdown\n' +
        'Open dir/a.ipynb at cell 3'
    );
    expect(element.getAttribute('aria-label')).toBe(
      'claude-code · Notebook · edit · dir/a.ipynb · cell 3 · markdown'
    );
    expect(notebookLine(call({ action: 'move', fromIndex: 1 }))).toEqual({
      file: 'a.ipynb',
      place: 'cell 1 → 3',
      tool: 'move'
    });
    const undo = call();
    undo.undoOf = 'n0';
    expect(notebookLine(undo)).toEqual({
      file: 'a.ipynb',
      place: 'cell 3',
      tool: 'undo · You'
    });
    // A failed call without a path or a cell: the action alone.
    const failed = renderNotebookCall(
      call({ status: 'error', path: '', cellIndex: null, error: 'x' }),
      ctx
    );
    expect(failed.querySelector('.jp-xcsh-CallTarget')).toBeNull();
    expect(text(failed.querySelector('.jp-xcsh-CallTitle'))).toBe('edit');
  });

  it('names the agent that made the call first, where it named itself', () => {
    expect(notebookStatusLine(call({ agent: 'claude-code' }))).toBe(
      'claude-code · Notebook · edit · dir/a.ipynb · cell 3 · markdown'
    );
    // Its terminal escapes never reach the panel.
    expect(notebookStatusLine(call({ agent: '\u001b[31mred\u001b[0m' }))).toBe(
      'red · Notebook · edit · dir/a.ipynb · cell 3 · markdown'
    );
  });

  describe('a batch', () => {
    const changes = [
      {
        action: 'edit',
        cellIndex: 1,
        cellId: 'c1',
        cellType: 'code',
        source: lines(5, 'x'),
        sourceHash: '0123456789abcdef',
        previousCell: { cell_type: 'code', id: 'c1', source: 'x = 1' }
      },
      {
        action: 'insert',
        cellIndex: 2,
        cellId: 'n1',
        cellType: 'markdown',
        source: '## About x',
        sourceHash: 'fedcba9876543210'
      },
      {
        action: 'move',
        cellIndex: 0,
        fromIndex: 4,
        cellId: 'c3',
        cellType: 'code',
        source: 'z = 3',
        sourceHash: 'aaaaaaaaaaaaaaaa'
      }
    ];
    const batch = () =>
      call({
        action: 'batch',
        cellIndex: null,
        cellType: null,
        source: null,
        changes
      });

    it('is one call whose status line counts its changes', () => {
      expect(notebookStatusLine(batch())).toBe(
        'Notebook · batch · dir/a.ipynb · 3 changes'
      );
      expect(
        notebookStatusLine(call({ action: 'batch', changes: [changes[1]] }))
      ).toBe('Notebook · batch · dir/a.ipynb · 1 change');
      expect(notebookLine(batch())).toEqual({
        file: 'a.ipynb',
        place: '3 changes',
        tool: 'batch'
      });
    });

    it('lists each change with its cell, type and collapsed source', () => {
      const { ctx } = fakeContext();
      const element = renderNotebookCall(batch(), ctx);
      const rows = [...element.querySelectorAll('.jp-xcsh-BatchChange')];
      expect(
        rows.map(row => text(row.querySelector('.jp-xcsh-BatchChangeTitle')))
      ).toEqual([
        '1. edit · cell 1 · code',
        '2. insert · cell 2 · markdown',
        '3. move · cell 4 → 0 · code'
      ]);
      expect(text(rows[0].querySelector('pre'))).toBe(lines(3, 'x'));
      expect(text(rows[0].querySelector('.jp-xcsh-More'))).toBe(
        'Show 2 more lines'
      );
      expect(text(rows[1].querySelector('pre'))).toBe('## About x');
    });

    it('opens the notebook at its first change and offers one undo', () => {
      const { ctx, actions } = fakeContext();
      const c = batch();
      const element = renderNotebookCall(c, ctx);
      element
        .querySelector<HTMLButtonElement>('.jp-xcsh-OpenNotebook')!
        .click();
      expect(actions.openNotebook).toHaveBeenCalledWith('dir/a.ipynb', 1);
      const undos =
        element.querySelectorAll<HTMLButtonElement>('.jp-xcsh-Undo');
      expect(undos).toHaveLength(1);
      undos[0].click();
      expect(actions.undo).toHaveBeenCalledWith(c);
    });

    it('shows a failed batch as its error, without changes', () => {
      const { ctx } = fakeContext();
      const element = renderNotebookCall(
        call({
          action: 'batch',
          status: 'error',
          error: 'Change 2 failed: Cell id not found: c9 in dir/a.ipynb',
          cellIndex: null,
          source: null
        }),
        ctx
      );
      expect(text(element)).toContain(
        'Change 2 failed: Cell id not found: c9 in dir/a.ipynb'
      );
      expect(element.querySelector('.jp-xcsh-BatchChange')).toBeNull();
      expect(element.querySelector('.jp-xcsh-Undo')).toBeNull();
    });
  });

  it('collapses the source to 6 lines and expands it', () => {
    const { ctx } = fakeContext();
    const c = call({ source: lines(9), cellType: 'code' });
    let element = renderNotebookCall(c, ctx);
    expect(text(element.querySelector('pre'))).toBe(lines(6));
    const more = element.querySelector<HTMLButtonElement>('.jp-xcsh-More')!;
    expect(more.textContent).toBe('Show 3 more lines');
    expect(more.getAttribute('aria-expanded')).toBe('false');
    more.click();
    element = renderNotebookCall(c, ctx);
    expect(text(element.querySelector('pre'))).toBe(lines(9));
    expect(text(element.querySelector('.jp-xcsh-More'))).toBe('Show less');
  });

  it('highlights code cells as python and markdown cells as markdown', () => {
    const { ctx } = fakeContext();
    const highlight = jest.spyOn(ctx, 'highlight');
    renderNotebookCall(call({ cellType: 'code', source: 'x = 1' }), ctx);
    renderNotebookCall(call({ cellType: 'markdown', source: '# T' }), ctx);
    renderNotebookCall(call({ cellType: 'raw', source: 'r' }), ctx);
    expect(highlight.mock.calls.map(args => args[1])).toEqual([
      'python',
      'markdown',
      null
    ]);
  });

  it('opens the notebook at the cell when its status line is clicked', () => {
    const { ctx, actions } = fakeContext();
    const element = renderNotebookCall(call(), ctx);
    element.querySelector<HTMLButtonElement>('.jp-xcsh-OpenNotebook')!.click();
    expect(actions.openNotebook).toHaveBeenCalledWith('dir/a.ipynb', 3);
  });

  it('shows an error block, and no link, for a failed call', () => {
    const { ctx } = fakeContext();
    const element = renderNotebookCall(
      call({
        status: 'error',
        error: 'Cell index 9 out of range (0-4) in dir/a.ipynb',
        source: null
      }),
      ctx
    );
    expect(element.dataset.status).toBe('error');
    expect(text(element.querySelector('.jp-xcsh-Error'))).toBe(
      'Cell index 9 out of range (0-4) in dir/a.ipynb'
    );
    expect(element.querySelector('.jp-xcsh-OpenNotebook')).toBeNull();
  });

  it('is one line, collapsed, expanding to its source on a click on the line', () => {
    const { ctx, actions } = fakeContext();
    const c = call();
    const first = renderNotebookCall(c, ctx);
    expect(first.querySelector<HTMLElement>('.jp-xcsh-CallBody')!.hidden).toBe(
      true
    );
    const toggle = first.querySelector('.jp-xcsh-Toggle')!;
    expect(toggle.getAttribute('aria-expanded')).toBe('false');
    expect(toggle.getAttribute('aria-label')).toBe('Expand');
    // The whole status line on hover, however narrow the panel.
    const title = first.querySelector<HTMLElement>('.jp-xcsh-CallTitle')!;
    expect(title.title).not.toBe('');

    // A click on a button of the line does its own thing only.
    first.querySelector<HTMLButtonElement>('.jp-xcsh-Keep')!.click();
    expect(actions.keep).toHaveBeenCalledWith(c);
    expect(
      renderNotebookCall(c, ctx).querySelector<HTMLElement>(
        '.jp-xcsh-CallBody'
      )!.hidden
    ).toBe(true);

    first
      .querySelector<HTMLElement>('.jp-xcsh-CallMeta .jp-xcsh-Time')!
      .click();
    const open = renderNotebookCall(c, ctx);
    expect(open.querySelector<HTMLElement>('.jp-xcsh-CallBody')!.hidden).toBe(
      false
    );
    expect(
      open.querySelector('.jp-xcsh-Toggle')!.getAttribute('aria-expanded')
    ).toBe('true');
  });

  it("offers Keep and Undo (the review's) for a finished change, and not for a read or an error", () => {
    const { ctx, actions } = fakeContext();
    const changed = call();
    const element = renderNotebookCall(changed, ctx);
    const button = element.querySelector<HTMLButtonElement>('.jp-xcsh-Undo');

    expect(button!.getAttribute('aria-label')).toBe('Undo');
    button!.click();
    expect(actions.undo).toHaveBeenCalledWith(changed);
    const keep = element.querySelector<HTMLButtonElement>('.jp-xcsh-Keep');
    expect(keep!.getAttribute('aria-label')).toBe('Keep');
    keep!.click();
    expect(actions.keep).toHaveBeenCalledWith(changed);
    for (const fields of [
      { action: 'read' },
      { status: 'error', error: 'nope' },
      { action: 'move', fromIndex: 3 }
    ]) {
      expect(
        renderNotebookCall(call(fields), ctx).querySelector('.jp-xcsh-Undo')
      ).toBeNull();
    }
  });

  it('shows an undo on its way, done, kept, or refused with the reason', () => {
    const { ctx } = fakeContext();
    const undoing = call();
    undoing.undo = { state: 'pending' };
    const pending = renderNotebookCall(undoing, ctx).querySelector(
      '.jp-xcsh-Undo'
    ) as HTMLButtonElement;
    expect(pending.disabled).toBe(true);
    expect(pending.getAttribute('aria-label')).toBe('Undoing…');

    const done = call();
    done.undo = { state: 'done', by: 'r1' };
    const doneElement = renderNotebookCall(done, ctx);
    expect(doneElement.querySelector('.jp-xcsh-Undo')).toBeNull();
    expect(text(doneElement.querySelector('.jp-xcsh-Undone'))).toBe('Undone');

    const kept = call();
    kept.undo = { state: 'kept' };
    const keptElement = renderNotebookCall(kept, ctx);
    expect(keptElement.querySelector('.jp-xcsh-Undo')).toBeNull();
    expect(keptElement.querySelector('.jp-xcsh-Keep')).toBeNull();
    expect(text(keptElement.querySelector('.jp-xcsh-Undone'))).toBe('Kept');

    const refused = call();
    refused.undo = {
      state: 'refused',
      message: 'Not undone: the cell was changed after this call.',
      detail: 'Cell 3 changed since it was read <b>'
    };
    const refusedElement = renderNotebookCall(refused, ctx);
    const alert = refusedElement.querySelector('.jp-xcsh-UndoRefused');
    expect(alert?.getAttribute('role')).toBe('alert');
    expect(text(alert)).toBe(
      'Not undone: the cell was changed after this call.' +
        'Cell 3 changed since it was read <b>'
    );
    expect(alert?.querySelector('b')).toBeNull();
    // A refused undo can be tried again once the cell is as the call left it.
    expect(refusedElement.querySelector('.jp-xcsh-Undo')).not.toBeNull();
  });

  it("says an undo made from the lab is the person's, not an agent call", () => {
    const { ctx } = fakeContext();
    const undo = call();
    undo.undoOf = 'n0';
    expect(
      renderNotebookCall(undo, ctx)
        .querySelector('.jp-xcsh-UndoOf')
        ?.getAttribute('aria-label')
    ).toBe('Your undo of an agent call');
    expect(notebookStatusLine(undo)).toMatch(/^You · undo · /);
    expect(notebookStatusLine(undo)).not.toContain('Notebook');
  });

  it('renders sources as text, never as markup', () => {
    const { ctx } = fakeContext();
    const element = renderNotebookCall(
      call({ source: '<img src=x onerror=alert(1)>', path: '<b>x</b>.ipynb' }),
      ctx
    );
    expect(element.querySelector('img')).toBeNull();
    expect(element.querySelector('b')).toBeNull();
  });
});

describe('renderPythonCall', () => {
  function call(...emissions: Record<string, unknown>[]): IPythonCall {
    return modelWith(...emissions).calls[0] as IPythonCall;
  }

  it('names the agent that made the call before what it ran', () => {
    const { ctx } = fakeContext();
    const named = call(
      py({
        event: 'started',
        agent: 'codex',
        cells: [{ index: 0, title: '', code: '1' }]
      })
    );
    expect(
      text(renderPythonCall(named, ctx).querySelector('.jp-xcsh-CallTitle'))
    ).toBe('codex · Python · agent · 1 cell');
    const unnamed = call(startedEmission([{ code: '1' }]));
    expect(
      text(renderPythonCall(unnamed, ctx).querySelector('.jp-xcsh-CallTitle'))
    ).toBe('Python · agent · 1 cell');
  });

  it('is open while it runs, and one line once finished', () => {
    const { ctx } = fakeContext();
    const body = (c: IPythonCall) =>
      renderPythonCall(c, ctx).querySelector<HTMLElement>('.jp-xcsh-CallBody')!;
    const running = call(startedEmission([{ code: 'x = 1' }]));
    expect(body(running).hidden).toBe(false);
    const finished = call(
      startedEmission([{ code: 'x = 1' }]),
      py({ event: 'finished', result: { isError: false } })
    );
    expect(body(finished).hidden).toBe(true);
  });

  it('shows each cell as [k/n] title with its status', () => {
    const { ctx } = fakeContext();
    const c = call(
      startedEmission([
        { title: 'load', code: 'x = 1' },
        { code: '\nprint(x)' }
      ]),
      py({ event: 'cell', cellIndex: 0, status: 'complete' }),
      py({ event: 'cell', cellIndex: 1, status: 'running' })
    );
    const cells = renderPythonCall(c, ctx).querySelectorAll('.jp-xcsh-Cell');
    expect(
      [...cells].map(cell => text(cell.querySelector('.jp-xcsh-CellTitle')))
    ).toEqual([
      '[1/2] load',
      // Untitled: the first line of code stands in.
      '[2/2] print(x)'
    ]);
    expect(
      [...cells].map(cell => (cell as HTMLElement).dataset.status)
    ).toEqual(['complete', 'running']);
  });

  it('collapses code to 12 lines and the output tail to its last 10', () => {
    const { ctx } = fakeContext();
    const c = call(
      startedEmission([{ code: lines(20, 'code') }]),
      py({ event: 'chunk', cellIndex: 0, text: lines(25, 'out') + '\n' })
    );
    let element = renderPythonCall(c, ctx);
    const [code, output] = element.querySelectorAll('pre');
    expect(text(code)).toBe(lines(12, 'code'));
    expect(text(output).split('\n')).toEqual(
      lines(25, 'out').split('\n').slice(15)
    );
    const buttons = [...element.querySelectorAll('.jp-xcsh-More')].map(text);
    expect(buttons).toEqual(['Show 8 more lines', 'Show 15 earlier lines']);

    element.querySelectorAll<HTMLButtonElement>('.jp-xcsh-More')[1].click();
    element = renderPythonCall(c, ctx);
    expect(text(element.querySelectorAll('pre')[1])).toBe(lines(25, 'out'));
  });

  it('shows the latest 3 status events, the others on expand', () => {
    const { ctx } = fakeContext();
    const events = [1, 2, 3, 4, 5].map(i =>
      py({
        event: 'display',
        cellIndex: 0,
        display: { kind: 'status', data: { op: 'step', n: i } }
      })
    );
    const c = call(startedEmission([{ code: 'x' }]), ...events);
    let element = renderPythonCall(c, ctx);
    const items = () =>
      [...element.querySelectorAll('.jp-xcsh-StatusEvents li')].map(text);
    expect(items()).toEqual(['step {"n":3}', 'step {"n":4}', 'step {"n":5}']);
    element
      .querySelector<HTMLButtonElement>('.jp-xcsh-StatusBlock .jp-xcsh-More')!
      .click();
    element = renderPythonCall(c, ctx);
    expect(items()).toHaveLength(5);
  });

  it('shows a status event by its message when it has one', () => {
    const { ctx } = fakeContext();
    const approval = { id: 'a1', summary: 'run cell 2 of a.ipynb' };
    const message = "waiting for the person's approval (90 s left): run cell 2";
    const c = call(
      startedEmission([{ code: 'x' }]),
      py({
        event: 'display',
        cellIndex: 0,
        display: {
          kind: 'status',
          data: { op: 'approval', state: 'waiting', message, approval }
        }
      })
    );
    const element = renderPythonCall(c, ctx);
    const items = [...element.querySelectorAll('.jp-xcsh-StatusEvents li')].map(
      text
    );
    expect(items).toEqual([`approval ${message}`]);
  });

  it('shows JSON as a tree cut to depth 2 and 5 items until expanded', () => {
    const { ctx } = fakeContext();
    const data = { a: { b: { c: 1 } }, list: [1, 2, 3, 4, 5, 6, 7] };
    const c = call(
      startedEmission([{ code: 'x' }]),
      py({ event: 'display', cellIndex: 0, display: { kind: 'json', data } })
    );
    let element = renderPythonCall(c, ctx);
    const tree = element.querySelector('.jp-xcsh-JsonTree')!;
    expect(text(tree)).toContain('{… 1 key}');
    expect(text(tree)).toContain('… 2 more items');
    element
      .querySelector<HTMLButtonElement>('.jp-xcsh-JsonBlock .jp-xcsh-More')!
      .click();
    element = renderPythonCall(c, ctx);
    const full = text(element.querySelector('.jp-xcsh-JsonTree'));
    expect(full).toContain('c: 1');
    expect(full).not.toContain('more');
  });

  it('renders images as thumbnails that open the whole image', () => {
    const { ctx, actions } = fakeContext();
    const path = '.xcsh-artifacts/20260101T000000-0123456789ab.python.png';
    const c = call(
      startedEmission([{ code: 'x' }]),
      py({
        event: 'display',
        cellIndex: 0,
        display: {
          kind: 'image',
          mimeType: 'image/png',
          data: 'iVBORw0KGgo=',
          bytes: 8
        }
      }),
      py({
        event: 'display',
        cellIndex: 0,
        display: {
          kind: 'image',
          mimeType: 'image/png',
          bytes: 3000000,
          width: 4000,
          height: 3000,
          artifactPath: path
        }
      })
    );
    const element = renderPythonCall(c, ctx);
    const img = element.querySelector('img.jp-xcsh-Thumbnail')!;
    expect(img.getAttribute('src')).toBe('data:image/png;base64,iVBORw0KGgo=');
    const links = element.querySelectorAll<HTMLElement>('.jp-xcsh-ImageLink');
    expect(text(links[0])).toBe('PNG, 8 B');
    expect(links[0].tagName).toBe('FIGURE'); // nothing kept to open
    expect(text(links[1])).toBe('Image not shown here4000x3000 PNG, 2.9 MiB');
    links[1].click();
    expect(actions.openArtifact).toHaveBeenCalledWith(path);
  });

  describe('a prompt waiting for an answer', () => {
    const runId = 'ef'.repeat(16);
    const waiting = (password = false) =>
      py({
        event: 'input',
        cellIndex: 0,
        input: { runId, prompt: 'name? ', password, state: 'waiting' }
      });

    it('shows the prompt with a box whose answer goes to the call', () => {
      const { ctx, actions } = fakeContext();
      const c = call(startedEmission([{ code: "input('name? ')" }]), waiting());
      const element = renderPythonCall(c, ctx);
      const form = element.querySelector('form.jp-xcsh-InputPrompt')!;
      expect(text(form)).toContain('The code waits for input: name? ');
      const field = form.querySelector<HTMLInputElement>('input')!;
      expect(field.type).toBe('text');
      field.value = 'bob';
      form.dispatchEvent(new Event('submit', { cancelable: true }));
      expect(actions.answer).toHaveBeenCalledWith(c, 'bob');
    });

    it('asks for a password in a password field', () => {
      const { ctx } = fakeContext();
      const c = call(startedEmission([{ code: 'getpass()' }]), waiting(true));
      const field = renderPythonCall(c, ctx).querySelector('input')!;
      expect(field.type).toBe('password');
    });

    it('keeps what a person typed across re-renders, and goes once answered', () => {
      const { ctx } = fakeContext();
      const model = modelWith(
        startedEmission([{ code: 'input()' }]),
        waiting()
      );
      const c = model.calls[0] as IPythonCall;
      const field = renderPythonCall(c, ctx).querySelector('input')!;
      field.value = 'half typed';
      field.dispatchEvent(new Event('input'));
      expect(renderPythonCall(c, ctx).querySelector('input')!.value).toBe(
        'half typed'
      );
      model.handleEmission(
        py({ event: 'input', input: { state: 'answered' } })
      );
      expect(renderPythonCall(c, ctx).querySelector('form')).toBeNull();
    });

    it('disables the box while the answer is sent and shows a failure', () => {
      const { ctx } = fakeContext();
      const model = modelWith(
        startedEmission([{ code: 'input()' }]),
        waiting()
      );
      const c = model.calls[0] as IPythonCall;
      model.setAnswering(c.id, true, null);
      expect(renderPythonCall(c, ctx).querySelector('input')!.disabled).toBe(
        true
      );
      model.setAnswering(c.id, false, 'Run is not waiting for input');
      expect(text(renderPythonCall(c, ctx).querySelector('[role=alert]'))).toBe(
        'Could not answer: Run is not waiting for input'
      );
    });
  });

  it('shows an interrupt button only while the call runs', () => {
    const { ctx, actions } = fakeContext();
    const model = modelWith(startedEmission([{ code: 'sleep()' }]));
    const c = model.calls[0] as IPythonCall;
    renderPythonCall(c, ctx)
      .querySelector<HTMLButtonElement>('.jp-xcsh-Interrupt')!
      .click();
    expect(actions.interrupt).toHaveBeenCalledWith(c);

    model.setInterrupting('p1', true, null);
    const pending = renderPythonCall(c, ctx).querySelector<HTMLButtonElement>(
      '.jp-xcsh-Interrupt'
    )!;
    expect(pending.disabled).toBe(true);

    model.handleEmission(
      py({ event: 'finished', result: { cancelled: true, isError: true } })
    );
    const element = renderPythonCall(c, ctx);
    expect(element.querySelector('.jp-xcsh-Interrupt')).toBeNull();
    expect(text(element.querySelector('.jp-xcsh-CallStatus'))).toBe(
      'cancelled'
    );
  });

  it('warns of truncation with a link that opens the artifact', () => {
    const { ctx, actions } = fakeContext();
    const c = call(
      startedEmission([{ code: "print('x' * 200000)" }]),
      py({
        event: 'finished',
        result: {
          truncated: true,
          totalLines: 1,
          totalBytes: 200001,
          artifactId: 'abc',
          artifactPath: '.xcsh-artifacts/abc.python.log',
          durationMs: 1500,
          cells: [{ index: 0, status: 'complete', durationMs: 1400 }]
        }
      })
    );
    const element = renderPythonCall(c, ctx);
    const warning = element.querySelector('.jp-xcsh-Warning')!;
    expect(text(warning)).toContain('Output truncated');
    expect(text(warning)).toContain('1 line, 195.3 KiB');
    warning.querySelector<HTMLButtonElement>('.jp-xcsh-OpenArtifact')!.click();
    expect(actions.openArtifact).toHaveBeenCalledWith(
      '.xcsh-artifacts/abc.python.log'
    );
    expect(
      text(element.querySelector('.jp-xcsh-CallHeader .jp-xcsh-Duration'))
    ).toBe('1.5 s');
    expect(text(element.querySelector('.jp-xcsh-Cell .jp-xcsh-Duration'))).toBe(
      '1.4 s'
    );
  });

  it('shows the result text of a failed call', () => {
    const { ctx } = fakeContext();
    const c = call(
      startedEmission([{ code: '1/0' }]),
      py({
        event: 'finished',
        result: {
          isError: true,
          text: 'ZeroDivisionError\nCommand exited with code 1'
        }
      })
    );
    expect(
      text(renderPythonCall(c, ctx).querySelector('pre.jp-xcsh-Error'))
    ).toBe('ZeroDivisionError\nCommand exited with code 1');
  });
});

describe('renderJsonTree', () => {
  it('stays bounded on a huge value', () => {
    const wide = Array.from({ length: 100000 }, (_, i) => ({ i }));
    const { node, clipped } = renderJsonTree(wide, {
      depth: 12,
      items: 100000,
      stringChars: 100
    });
    expect(clipped).toBe(true);
    expect(node.querySelectorAll('li').length).toBeLessThan(6000);
  });
});

describe('ActivityPanel', () => {
  let panel: ActivityPanel;
  let model: ActivityModel;
  const actions = {
    openNotebook: jest.fn(() => Promise.resolve()),
    openArtifact: jest.fn(() => Promise.resolve()),
    interrupt: jest.fn(() => Promise.reject(new Error('server gone'))),
    answer: jest.fn(() => Promise.resolve()),
    undo: jest.fn(() => Promise.resolve()),
    keep: jest.fn(() => Promise.resolve()),
    clear: jest.fn(() => Promise.resolve()),
    filter: jest.fn(() => Promise.resolve())
  };

  let consoleError: jest.SpyInstance;

  beforeEach(() => {
    // The panel logs what it cannot render; none of these tests may hit that.
    consoleError = jest.spyOn(console, 'error');
    model = new ActivityModel();
    // Its buttons run the commands, as in the lab.
    const commands = new CommandRegistry();
    panel = new ActivityPanel({ model, actions: commandActions(commands) });
    addActivityCommands({
      commands,
      model,
      panel,
      show: () => undefined,
      actions,
      ask: () => Promise.resolve(null)
    });
    Widget.attach(panel, document.body);
  });

  afterEach(() => {
    panel.dispose();
    expect(consoleError).not.toHaveBeenCalled();
    consoleError.mockRestore();
  });

  const ids = () =>
    [...panel.node.querySelectorAll<HTMLElement>('.jp-xcsh-Call')]
      .filter(element => !element.hidden)
      .map(element => element.dataset.callId);

  it('says it is empty until a call arrives', () => {
    expect(
      panel.node.querySelector<HTMLElement>('.jp-xcsh-Empty')!.hidden
    ).toBe(false);
    model.handleEmission(notebookEmission());
    expect(
      panel.node.querySelector<HTMLElement>('.jp-xcsh-Empty')!.hidden
    ).toBe(true);
  });

  it('lists calls newest first and filters them by kind', async () => {
    model.handleEmission(notebookEmission({ callId: 'n1' }));
    model.handleEmission(startedEmission([{ code: 'x' }]));
    model.handleEmission(notebookEmission({ callId: 'n2' }));
    expect(ids()).toEqual(['n2', 'p1', 'n1']);
    const select = await waitFor(() =>
      panel.node.querySelector<HTMLSelectElement>('.jp-xcsh-Filter select')
    );
    choose(select, 'python');
    expect(ids()).toEqual(['p1']);
    panel.filter = 'notebook';
    expect(ids()).toEqual(['n2', 'n1']);
    await waitFor(() => select.value === 'notebook', 'the select to follow');
    expect(text(panel.node.querySelector('.jp-xcsh-Count'))).toBe('2 calls');
  });

  it('clears finished calls with its button', async () => {
    model.handleEmission(notebookEmission({ callId: 'n1' }));
    model.handleEmission(startedEmission([{ code: 'x' }]));
    const clear = await waitFor(() =>
      panel.node.querySelector<HTMLButtonElement>('.jp-xcsh-Clear')
    );
    clear.click();
    expect(ids()).toEqual(['p1']);
  });

  it('updates a streaming call in place and keeps the focus on its toggle', () => {
    model.handleEmission(startedEmission([{ code: 'x' }]));
    model.handleEmission(py({ event: 'chunk', cellIndex: 0, text: lines(30) }));
    const more = panel.node.querySelector<HTMLButtonElement>('.jp-xcsh-More')!;
    more.focus();
    more.click();
    const after = panel.node.querySelector<HTMLButtonElement>('.jp-xcsh-More')!;
    expect(after).not.toBe(more);
    expect(document.activeElement).toBe(after);
    expect(after.textContent).toBe('Show less');
    model.handleEmission(py({ event: 'chunk', cellIndex: 0, text: lines(40) }));
    expect(document.activeElement?.textContent).toBe('Show less');
    expect(text(panel.node.querySelector('.jp-xcsh-Output'))).toBe(lines(40));
  });

  it('keeps working when an action fails', async () => {
    const warn = jest
      .spyOn(console, 'warn')
      .mockImplementation(() => undefined);
    model.handleEmission(startedEmission([{ code: 'x' }]));
    panel.node.querySelector<HTMLButtonElement>('.jp-xcsh-Interrupt')!.click();
    await new Promise(resolve => setTimeout(resolve, 0));
    expect(actions.interrupt).toHaveBeenCalled();
    expect(warn).toHaveBeenCalled();
    warn.mockRestore();
  });

  it('waits until it is shown to render, then catches up', () => {
    panel.hide();
    model.handleEmission(notebookEmission({ callId: 'late' }));
    expect(panel.node.querySelector('[data-call-id="late"]')).toBeNull();
    panel.show();
    expect(ids()).toEqual(['late']);
  });

  it('renders whatever the server sends without breaking', () => {
    const garbage: unknown[] = [
      {
        schema_id: PYTHON_SCHEMA_ID,
        callId: 'g',
        event: 'display',
        cellIndex: 0,
        display: {
          kind: 'json',
          data: { deep: { deeper: { deepest: [[[[1]]]] } } }
        }
      },
      {
        schema_id: PYTHON_SCHEMA_ID,
        callId: 'g',
        event: 'display',
        cellIndex: 3,
        display: { kind: 'status', data: [null, { op: {} }] }
      },
      {
        schema_id: PYTHON_SCHEMA_ID,
        callId: 'g',
        event: 'display',
        cellIndex: 1,
        display: { kind: 'status', data: { op: 5, x: 'y'.repeat(1000) } }
      },
      {
        schema_id: PYTHON_SCHEMA_ID,
        callId: 'g',
        event: 'chunk',
        cellIndex: 2,
        text: '\u0000\u001b[31mred\r\n'
      },
      {
        schema_id: PYTHON_SCHEMA_ID,
        callId: 'g',
        event: 'finished',
        result: { truncated: true, artifactId: 7, cells: 'x' }
      },
      {
        schema_id: NOTEBOOK_SCHEMA_ID,
        callId: 'nb',
        action: '',
        path: '',
        status: 'error'
      },
      {
        schema_id: NOTEBOOK_SCHEMA_ID,
        callId: 'nb2',
        action: 'x',
        path: 'p',
        status: 'ok',
        cellIndex: 0,
        source: ''
      },
      'not even an object'
    ];
    for (const emission of garbage) {
      expect(() => model.handleEmission(emission)).not.toThrow();
    }
    expect(ids()).toEqual(['nb2', 'nb', 'g']);
    const g = panel.node.querySelector('[data-call-id="g"]')!;
    expect(g.querySelectorAll('.jp-xcsh-Cell')).toHaveLength(4);
    expect(g.querySelector('.jp-xcsh-Warning')).not.toBeNull();
    expect(g.querySelector('.jp-xcsh-OpenArtifact')).toBeNull();
  });

  it('highlights code once and reuses it while the call streams', async () => {
    const highlighter = jest.fn(
      async (code: string, language: string, element: HTMLElement) => {
        element.appendChild(h('span', { class: `hl-${language}` }, code));
      }
    );
    const highlighted = new ActivityPanel({ model, actions, highlighter });
    Widget.attach(highlighted, document.body);
    try {
      model.handleEmission(startedEmission([{ code: 'x = 1' }]));
      await Promise.resolve();
      const code = () => highlighted.node.querySelector('pre.jp-xcsh-Source')!;
      expect(code().querySelector('.hl-python')?.textContent).toBe('x = 1');
      model.handleEmission(py({ event: 'chunk', cellIndex: 0, text: 'out' }));
      // Re-rendered from the cache, synchronously: no flash of plain text.
      expect(code().querySelector('.hl-python')?.textContent).toBe('x = 1');
      expect(highlighter).toHaveBeenCalledTimes(1);
    } finally {
      highlighted.dispose();
    }
  });
});
