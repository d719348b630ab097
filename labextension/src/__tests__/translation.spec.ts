/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  ITranslator,
  nullTranslator,
  TranslationBundle
} from '@jupyterlab/translation';
import { CommandRegistry } from '@lumino/commands';
import { Widget } from '@lumino/widgets';

import { XcshResponseError } from '../request';
import { CellMarks } from '../marks/model';
import { NotebookMarks } from '../marks/notebookmarks';
import { addActivityCommands, commandActions } from '../panel/commands';
import { PYTHON_SCHEMA_ID } from '../core/events';
import { ActivityModel, INotebookCall } from '../core/activity';
import { ActivityPanel } from '../panel/widget';
import { GuardedUndoer } from '../review/undo';
import { AgentStatus, AgentStatusModel } from '../status/agentstatus';
import type { IXcshClient } from '../tokens';
import { TRANSLATION_DOMAIN, translationBundle } from '../translation';
import { notebookEditEmission, openNotebook, waitFor } from './helpers';

/**
 * A translator that wraps every string it translates in « », and records the
 * domains asked for: a string shown without « » did not go through it.
 */
function markingTranslator(): { translator: ITranslator; domains: string[] } {
  const domains: string[] = [];
  const mark = (text: string) => `«${text}»`;
  const translator: ITranslator = {
    languageCode: 'xx',
    load: (domain: string): TranslationBundle => {
      domains.push(domain);
      const base = nullTranslator.load(domain);
      return {
        ...base,
        __: (msgid, ...args) => mark(base.__(msgid, ...args)),
        _n: (msgid, plural, n, ...args) =>
          mark(base._n(msgid, plural, n, ...args)),
        _p: (context, msgid, ...args) => mark(base._p(context, msgid, ...args))
      } as TranslationBundle;
    }
  };
  return { translator, domains };
}

/** Whether a text is wholly one or more translated strings. */
const translated = (text: string | null | undefined) =>
  /^«[^]*»$/.test((text ?? '').trim());

describe('the translation of the lab extension', () => {
  let translator: ITranslator;
  let domains: string[];
  beforeEach(() => {
    ({ translator, domains } = markingTranslator());
  });

  it('loads the jupyter_xcsh domain, and shows strings as written without a translator', () => {
    translationBundle(translator);
    expect(domains).toEqual([TRANSLATION_DOMAIN]);
    expect(TRANSLATION_DOMAIN).toBe('jupyter_xcsh');
    expect(translationBundle(null).__('Agent: %1 running', 2)).toBe(
      'Agent: 2 running'
    );
  });

  it('puts the panel, its calls, answer box and undo through the translator', async () => {
    const model = new ActivityModel();
    const commands = new CommandRegistry();
    const panel = new ActivityPanel({
      model,
      translator,
      actions: commandActions(commands)
    });
    Widget.attach(panel, document.body);
    const node = panel.node;
    expect(
      translated(node.querySelector('.jp-xcsh-PanelTitle')?.textContent)
    ).toBe(true);
    expect(translated(node.querySelector('.jp-xcsh-Empty')?.textContent)).toBe(
      true
    );
    const clear = await waitFor(() => node.querySelector('.jp-xcsh-Clear'));
    expect(
      translated(
        clear.querySelector('.jp-ToolbarButtonComponent-label')?.textContent
      )
    ).toBe(true);
    expect(translated(clear.getAttribute('title'))).toBe(true);
    const select = await waitFor(() =>
      node.querySelector('.jp-xcsh-Filter select')
    );
    expect(translated(select.getAttribute('aria-label'))).toBe(true);
    expect(select.querySelectorAll('option')).toHaveLength(3);
    for (const option of select.querySelectorAll('option')) {
      expect(translated(option.textContent)).toBe(true);
    }

    model.handleEmission(notebookEditEmission('n1'));
    model.handleEmission({
      schema_id: PYTHON_SCHEMA_ID,
      callId: 'p1',
      session: 's',
      event: 'started',
      cells: [{ index: 0, title: '', code: 'input()' }]
    });
    model.handleEmission({
      schema_id: PYTHON_SCHEMA_ID,
      callId: 'p1',
      session: 's',
      event: 'input',
      cellIndex: 0,
      input: {
        runId: 'ef'.repeat(16),
        prompt: 'Name? ',
        password: false,
        state: 'waiting'
      }
    });

    expect(translated(node.querySelector('.jp-xcsh-Count')?.textContent)).toBe(
      true
    );
    const notebook = node.querySelector('[data-call-id=n1]')!;
    expect(notebook.querySelector('.jp-xcsh-CallTitle')?.textContent).toBe(
      'a.ipynb · «cell 0» · edit'
    );
    expect(notebook.getAttribute('aria-label')).toMatch(
      /^«Notebook» · edit · a\.ipynb · «cell 0» · code$/
    );
    const undo = notebook.querySelector('.jp-xcsh-Undo')!;
    expect(translated(undo.getAttribute('aria-label'))).toBe(true);
    expect(undo.getAttribute('title')).toMatch(/^«Undo»: «Put the notebook/);
    expect(
      translated(
        notebook.querySelector('.jp-xcsh-Toggle')?.getAttribute('title')
      )
    ).toBe(true);

    const python = node.querySelector('[data-call-id=p1]')!;
    expect(python.querySelector('.jp-xcsh-CallTitle')?.textContent).toBe(
      '«Python» · s · «1 cell»'
    );
    expect(
      translated(python.querySelector('.jp-xcsh-CallStatus')?.textContent)
    ).toBe(true);
    expect(
      translated(python.querySelector('.jp-xcsh-Interrupt')?.textContent)
    ).toBe(true);
    const form = python.querySelector('form.jp-xcsh-InputPrompt')!;
    expect(translated(form.getAttribute('aria-label'))).toBe(true);
    expect(
      translated(form.querySelector('.jp-xcsh-InputSend')?.textContent)
    ).toBe(true);
    expect(
      translated(form.querySelector('input')?.getAttribute('aria-label'))
    ).toBe(true);
    expect(
      form.querySelector('.jp-xcsh-InputLabel')?.firstChild?.textContent
    ).toMatch(/^«The code waits for input: »$/);
    panel.dispose();
  });

  it('says what became of an undo through the translator', async () => {
    const model = new ActivityModel();
    model.handleEmission(notebookEditEmission('n1'));
    const refusing = {
      notebook: () =>
        Promise.reject(
          new XcshResponseError(
            { status: 409 } as Response,
            'changed since',
            'stale_cell'
          )
        ),
      getArtifact: () => Promise.resolve('')
    } as unknown as IXcshClient;
    const call = () => model.get('n1') as INotebookCall;
    const target = {
      path: 'a.ipynb',
      callId: 'n1',
      cellId: null,
      event: call().event
    };
    const trans = translationBundle(translator);
    const refused = await new GuardedUndoer(refusing, () => null, trans).undo(
      target
    );
    expect(refused).toMatchObject({ state: 'refused' });
    expect(translated((refused as { message: string }).message)).toBe(true);

    const stale = await new GuardedUndoer(
      refusing,
      () => [{ id: 'c0', source: 'typed since' }],
      trans
    ).undo(target);
    expect((stale as { message: string }).message).toMatch(
      /^«Not undone: «the cell was changed/
    );
  });

  it('puts the status item through the translator', () => {
    const item = new AgentStatus(
      new AgentStatusModel(new ActivityModel()),
      () => undefined,
      translationBundle(translator)
    );
    // What the item renders (React renders it to the node later).
    const props = (
      item as unknown as { render(): { props: Record<string, string> } }
    ).render().props;
    expect(props.source).toBe('«Agent: idle»');
    expect(translated(props.title)).toBe(true);
    item.dispose();
  });

  it('puts the cell marks through the translator', async () => {
    const { context, notebook, dispose } = await openNotebook();
    const marks = new CellMarks();
    const view = new NotebookMarks(notebook, marks, {
      trans: translationBundle(translator)
    });
    marks.add({
      path: context.path,
      callId: 'abcdef0123456789',
      action: 'edit',
      cellId: 'c0',
      cellIndex: 0,
      source: 'x = 2',
      time: Date.now()
    });
    await new Promise(resolve => setTimeout(resolve, 0));
    const mark =
      notebook.content.widgets[0].node.querySelector('.jp-xcsh-CellMark');
    expect(mark?.getAttribute('aria-label')).toMatch(
      /^«An agent edited this cell at .* \(call abcdef01\)\.»$/
    );
    view.dispose();
    dispose();
  });

  it('puts the command labels through the translator', () => {
    const commands = new CommandRegistry();
    const model = new ActivityModel();
    addActivityCommands({
      commands,
      model,
      panel: { filter: 'all' },
      show: () => undefined,
      actions: {} as any,
      ask: () => Promise.resolve(null),
      trans: translationBundle(translator)
    });
    for (const id of commands.listCommands()) {
      expect(
        translated(commands.label(id, { kind: 'python', path: 'a' }))
      ).toBe(true);
    }
  });
});
