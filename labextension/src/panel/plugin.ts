/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, InputDialog } from '@jupyterlab/apputils';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Event } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator } from '@jupyterlab/translation';
import { LabIcon } from '@jupyterlab/ui-components';
import type { Widget } from '@lumino/widgets';

import {
  artifactIdOf,
  fileName,
  followArtifactLinks,
  openArtifact
} from '../artifacts/viewer';
import { activitySettingsApplier, loadSettings } from '../settings';
import { IAgentActivity, ICellMarks, IXcshClient } from '../tokens';
import { translationBundle } from '../translation';
import { UnreadBadge } from './badge';
import {
  addActivityCommands,
  commandActions,
  CommandIDs,
  PALETTE_ITEMS
} from './commands';
import { loadHistory } from './history';
import { ActivityModel, IPythonCall } from '../core/activity';
import { ActivityPanel } from './widget';

export { CommandIDs } from './commands';

/**
 * The id of the panel in the shell (also its layout-restorer name).
 */
const PANEL_ID = 'jupyter-xcsh-activity';

/**
 * The icon of the activity panel's sidebar tab.
 */
export const activityIcon = new LabIcon({
  name: 'jupyter-xcsh:activity',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
    '<path class="jp-icon3" fill="#616161" d="M3 4h18v2H3zm0 14h10v2H3zm0-7h3.6' +
    'l2-4.2 3.8 8.4 2.3-4.2H21v2h-5.1l-3.6 6.6-3.7-8.2-.7 1.8H3z"/></svg>'
});

/**
 * Shows agents' tool calls live in a sidebar panel, from the server's events;
 * finished notebook changes can be reverted from it.
 */
export const activityPlugin: JupyterFrontEndPlugin<IAgentActivity> = {
  id: 'jupyter-xcsh:activity',
  description:
    'A sidebar panel listing the notebook and python tool calls of agents as they happen.',
  autoStart: true,
  provides: IAgentActivity,
  requires: [IXcshClient],
  optional: [
    ILayoutRestorer,
    IEditorLanguageRegistry,
    ICommandPalette,
    INotebookTracker,
    ICellMarks,
    ITranslator,
    ISettingRegistry
  ],
  activate: (
    app: JupyterFrontEnd,
    client: IXcshClient,
    restorer: ILayoutRestorer | null,
    languages: IEditorLanguageRegistry | null,
    palette: ICommandPalette | null,
    notebooks: INotebookTracker | null,
    marks: ICellMarks | null,
    translator: ITranslator | null,
    settingRegistry: ISettingRegistry | null
  ): IAgentActivity => {
    const trans = translationBundle(translator);
    followArtifactLinks(app, trans);
    const model = new ActivityModel();
    const panel = new ActivityPanel({
      model,
      translator,
      actions: commandActions(app.commands),
      connectAgent: () =>
        void app.commands.execute('jupyter-xcsh:connect-agent'),
      highlighter: languages
        ? (code, language, element) =>
            languages.highlight(code, languages.findBest(language), element)
        : undefined
    });
    panel.id = PANEL_ID;
    panel.title.icon = activityIcon;
    panel.title.caption = trans.__('Agent activity');
    app.shell.add(panel, 'right', { rank: 650 });
    restorer?.add(panel, PANEL_ID);
    const badge = new UnreadBadge(panel, model);
    panel.disposed.connect(() => badge.dispose());

    // The server's event bus, through the lab's own events websocket.
    const onEmission = (_: Event.IManager, emission: Event.Emission) => {
      model.handleEmission(emission);
    };
    app.serviceManager.events.stream.connect(onEmission);
    panel.disposed.connect(() =>
      app.serviceManager.events.stream.disconnect(onEmission)
    );
    // What agents did before this page: the server's history, merged by callId.
    void loadHistory(model, client, marks);

    loadSettings(
      settingRegistry,
      activityPlugin.id,
      activitySettingsApplier(model, panel)
    );

    addActivityCommands({
      commands: app.commands,
      trans,
      model,
      panel,
      show: () => app.shell.activateById(panel.id),
      actions: {
        openNotebook: (path, cellIndex) => openNotebook(app, path, cellIndex),
        // An artifact through the artifacts endpoint (its folder is hidden by default).
        openArtifact: path => {
          const id = artifactIdOf(path);
          return id !== null
            ? openArtifact(app, id, trans, fileName(path))
            : app.commands.execute('docmanager:open', { path });
        },
        interrupt: call => interrupt(model, client, call),
        answer: (call, value) => answer(model, client, call, value),
        // The review's keep and undo (review/): one way to decide on an agent's change.
        undo: call =>
          app.commands.execute('jupyter-xcsh:review-undo-call', {
            callId: call.id
          }),
        keep: call =>
          app.commands.execute('jupyter-xcsh:review-keep-call', {
            callId: call.id
          })
      },
      ask: async (prompt, password) => {
        const answered = await (password
          ? InputDialog.getPassword({ title: prompt })
          : InputDialog.getText({ title: prompt }));
        return answered.button.accept ? answered.value : null;
      }
    });
    for (const item of PALETTE_ITEMS) {
      palette?.addItem({ ...item, category: trans.__('Agent') });
    }
    return {
      model,
      show: () => void app.commands.execute(CommandIDs.show),
      addSection: section => panel.addSection(section)
    };
  }
};

/**
 * Open a notebook and bring one of its cells into view.
 */
async function openNotebook(
  app: JupyterFrontEnd,
  path: string,
  cellIndex: number | null
): Promise<void> {
  const widget = (await app.commands.execute('docmanager:open', {
    path
  })) as Widget | undefined;
  if (!(widget instanceof NotebookPanel) || cellIndex === null) {
    return;
  }
  await widget.context.ready;
  await widget.revealed;
  const notebook = widget.content;
  const count = notebook.widgets.length;
  if (count === 0) {
    return;
  }
  const index = Math.min(cellIndex, count - 1);
  notebook.activeCellIndex = index;
  await notebook.scrollToItem(index, 'center');
}

/**
 * Ask the server to cancel a running python call (only that call: others
 * queued on its session go on).
 */
async function interrupt(
  model: ActivityModel,
  client: IXcshClient,
  call: IPythonCall
): Promise<void> {
  if (call.interrupting) {
    return;
  }
  model.setInterrupting(call.id, true, null);
  try {
    await client.interruptCall(call.id);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    model.setInterrupting(call.id, false, message);
  }
}

/**
 * Send a person's answer to the prompt a python call waits on. The call's
 * events show what follows; a failure is shown next to the answer box.
 */
async function answer(
  model: ActivityModel,
  client: IXcshClient,
  call: IPythonCall,
  value: string
): Promise<void> {
  const runId = call.input?.runId ?? null;
  if (runId === null || call.answering) {
    return;
  }
  model.setAnswering(call.id, true, null);
  try {
    await client.answerInput(runId, value);
    model.setAnswering(call.id, false, null);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    model.setAnswering(call.id, false, message);
  }
}
