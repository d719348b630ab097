/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette, IToolbarWidgetRegistry } from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Event } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator } from '@jupyterlab/translation';

import { IAgentActivity, IXcshClient } from '../tokens';
import { translationBundle } from '../translation';
import { PolicyStore } from './access';
import { ApprovalSection } from './activity';
import { policyAPI } from './api';
import { ApprovalQueue } from './approvals';
import {
  askBeforeRunIcon,
  hasAskBeforeRun,
  NotebookAskMarks,
  setAskBeforeRun
} from './celltag';
import { addAccessCommands, PolicyCommandIDs } from './commands';
import { ApprovalPrompter } from './prompter';
import { ApprovalWatch } from './watch';

export { PolicyCommandIDs } from './commands';

/** The long poll of the active plugin (stopped when it is deactivated). */
let watch: ApprovalWatch | null = null;
/** The refresh of the policies shown (every {@link ApprovalQueue.POLL_MS}). */
let refresh: number | undefined;

/**
 * The person decides what agents may do: the "Agent access" of notebooks and folders, the
 * `ask-before-run` cell tag, and the approval of agents' requests.
 */
export const policyPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-xcsh:policy',
  description:
    'Agent access of notebooks and folders, cells that run only with permission, and approvals of agent requests.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [
    IXcshClient,
    IAgentActivity,
    ICommandPalette,
    IFileBrowserFactory,
    IToolbarWidgetRegistry,
    ITranslator,
    ISettingRegistry
  ],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    client: IXcshClient | null,
    activity: IAgentActivity | null,
    palette: ICommandPalette | null,
    browsers: IFileBrowserFactory | null,
    toolbars: IToolbarWidgetRegistry | null,
    translator: ITranslator | null,
    settingRegistry: ISettingRegistry | null
  ): void => {
    const trans = translationBundle(translator);
    const api = policyAPI(app.serviceManager.serverSettings);
    const { commands } = app;

    // ---- Approvals: events at once, and a long poll (which also says a lab is open).
    const queue = new ApprovalQueue(api, { trans });
    app.serviceManager.events.stream.connect(
      (_: Event.IManager, emission: Event.Emission) => {
        queue.handleEmission(emission);
      }
    );
    watch?.dispose();
    watch = new ApprovalWatch({
      queue,
      fetch: query => api.watchApprovals(query),
      onError: error => {
        const status = (error as { response?: Response }).response?.status;
        if (status !== 404) {
          console.warn('jupyter-xcsh: could not read agent requests', error);
        }
      }
    });
    void watch.start();
    if (client !== null) {
      void loadApprovalHistory(queue, client);
    }

    const prompter = new ApprovalPrompter(queue, trans);
    prompter.start();
    if (activity?.addSection) {
      activity.addSection(
        new ApprovalSection(queue, trans, id => prompter.open(id))
      );
    }
    commands.addCommand(PolicyCommandIDs.answer, {
      label: trans.__('Answer Agent Request…'),
      caption: trans.__('Show the oldest agent request waiting for you'),
      isEnabled: () => queue.pending.length > 0,
      execute: () => {
        const first = queue.pending[0];
        if (first !== undefined) {
          prompter.open(first.approval.id);
        }
      }
    });
    queue.changed.connect(() =>
      commands.notifyCommandChanged(PolicyCommandIDs.answer)
    );
    palette?.addItem({
      command: PolicyCommandIDs.answer,
      category: trans.__('Agent')
    });

    // ---- Agent access of notebooks and folders.
    const store = new PolicyStore(api);
    // Another lab, or the operator's restart with new rules, may change what is shown.
    window.clearInterval(refresh);
    refresh = window.setInterval(() => {
      void store.refreshAll();
    }, ApprovalQueue.POLL_MS);
    addAccessCommands({
      app,
      tracker,
      browsers,
      toolbars,
      palette,
      store,
      trans
    });

    // ---- The ask-before-run tag.
    const activeTagged = () => {
      const cell = tracker.activeCell;
      return cell ? hasAskBeforeRun(cell.model.getMetadata('tags')) : false;
    };
    commands.addCommand(PolicyCommandIDs.askBeforeRun, {
      label: trans.__('Ask Before Agents Run This Cell'),
      caption: args =>
        args.toolbar
          ? activeTagged()
            ? trans.__(
                'Agents ask before running this cell (tag "ask-before-run"): click to remove'
              )
            : trans.__(
                'Make agents ask you before they run this cell (tag "ask-before-run")'
              )
          : trans.__(
              'Set or remove the tag "ask-before-run": an agent\'s run stops at the cell until you allow it'
            ),
      icon: args => (args.toolbar ? askBeforeRunIcon : undefined),
      isEnabled: () => tracker.activeCell?.model.type === 'code',
      isToggled: activeTagged,
      execute: () => {
        const cell = tracker.activeCell;
        if (cell?.model.type === 'code') {
          setAskBeforeRun(cell.model, !activeTagged());
          commands.notifyCommandChanged(PolicyCommandIDs.askBeforeRun);
        }
      }
    });
    tracker.activeCellChanged.connect(() =>
      commands.notifyCommandChanged(PolicyCommandIDs.askBeforeRun)
    );
    palette?.addItem({
      command: PolicyCommandIDs.askBeforeRun,
      category: trans.__('Agent')
    });
    app.contextMenu.addItem({
      command: PolicyCommandIDs.askBeforeRun,
      selector: '.jp-Notebook .jp-CodeCell',
      rank: 60
    });
    const follow = (panel: NotebookPanel) => new NotebookAskMarks(panel, trans);
    tracker.forEach(follow);
    tracker.widgetAdded.connect((_, panel) => follow(panel));

    // The cell and notebook toolbar items are declared in the plugin's schema.
    void settingRegistry?.load(policyPlugin.id).catch(() => undefined);
  },
  deactivate: (): void => {
    watch?.dispose();
    watch = null;
    window.clearInterval(refresh);
  }
};

/**
 * Put the asks, answers and refusals the server's activity history kept into the log; a
 * history turned off (404) leaves it empty.
 */
async function loadApprovalHistory(
  queue: ApprovalQueue,
  client: Pick<IXcshClient, 'activityHistory'>
): Promise<void> {
  try {
    const page = await client.activityHistory({ limit: 1000 });
    for (const entry of page.entries) {
      if (entry.kind === 'approval') {
        entry.events.forEach(emission => queue.restore(emission));
      }
    }
  } catch (error) {
    const status = (error as { response?: Response }).response?.status;
    if (status !== 404) {
      console.warn('jupyter-xcsh: could not load past approvals', error);
    }
  }
}
