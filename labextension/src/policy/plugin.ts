/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  ICommandPalette,
  IToolbarWidgetRegistry,
  showErrorMessage
} from '@jupyterlab/apputils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Event } from '@jupyterlab/services';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator } from '@jupyterlab/translation';
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { Menu } from '@lumino/widgets';

import { IAgentActivity, IXcshClient } from '../tokens';
import { translationBundle } from '../translation';
import { AccessChoice, AgentAccessButton, PolicyStore } from './access';
import { ApprovalSection } from './activity';
import { policyAPI } from './api';
import { ApprovalQueue } from './approvals';
import {
  askBeforeRunIcon,
  hasAskBeforeRun,
  NotebookAskMarks,
  setAskBeforeRun
} from './celltag';
import {
  chosenPreset,
  heldByOperator,
  limitsLine,
  operatorLimits,
  PRESETS,
  presetCaption,
  presetLabel
} from './presets';
import { ApprovalPrompter } from './prompter';
import type { RuleKind } from './types';

/**
 * The policy plugin's command ids.
 */
export namespace PolicyCommandIDs {
  /** Set the agent access of a notebook or folder (`preset`, `target`). */
  export const access = 'jupyter-xcsh:agent-access';
  /** The server's limits of a notebook's or folder's access (a line in the menu). */
  export const accessLimits = 'jupyter-xcsh:agent-access-limits';
  /** Set or remove the `ask-before-run` tag of the active cell. */
  export const askBeforeRun = 'jupyter-xcsh:toggle-ask-before-run';
  /** Show the oldest agent request waiting for an answer. */
  export const answer = 'jupyter-xcsh:answer-agent-request';
}

/**
 * The notebook toolbar item's name (in `schema/policy.json`).
 */
const TOOLBAR_ITEM = 'xcsh-agent-access';

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

    // ---- Approvals: events at once, a poll every 10 s (which also says a lab is open).
    const queue = new ApprovalQueue(api, { trans });
    app.serviceManager.events.stream.connect(
      (_: Event.IManager, emission: Event.Emission) => {
        queue.handleEmission(emission);
      }
    );
    const poll = () =>
      queue.poll().catch(error => {
        const status = (error as { response?: Response }).response?.status;
        if (status !== 404) {
          console.warn('jupyter-xcsh: could not read agent requests', error);
        }
      });
    void poll();
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
    window.setInterval(() => {
      void poll();
      void store.refreshAll();
    }, ApprovalQueue.POLL_MS);
    const reading = new Set<string>();
    const policyOf = (path: string) => {
      const policy = store.get(path);
      if (policy === undefined && !reading.has(path)) {
        reading.add(path);
        void store.refresh(path).finally(() => reading.delete(path));
      }
      return policy;
    };
    store.changed.connect(() => {
      commands.notifyCommandChanged(PolicyCommandIDs.access);
      commands.notifyCommandChanged(PolicyCommandIDs.accessLimits);
    });
    const target = (
      args: ReadonlyPartialJSONObject
    ): { path: string; kind: RuleKind } | null => {
      if (typeof args.path === 'string') {
        return {
          path: args.path,
          kind: args.kind === 'folder' ? 'folder' : 'notebook'
        };
      }
      if (args.target === 'browser') {
        const browser = browsers?.tracker.currentWidget;
        const item = browser ? browser.selectedItems().next() : null;
        const model = item && !item.done ? item.value : null;
        if (model?.type === 'directory') {
          return { path: model.path, kind: 'folder' };
        }
        if (model?.type === 'notebook') {
          return { path: model.path, kind: 'notebook' };
        }
        return null;
      }
      const panel = tracker.currentWidget;
      return panel ? { path: panel.context.path, kind: 'notebook' } : null;
    };
    commands.addCommand(PolicyCommandIDs.access, {
      label: args => {
        const choice = args.preset as AccessChoice;
        const name =
          choice === 'inherit'
            ? trans.__('Same as the Folder')
            : presetLabel(choice, trans);
        const where = target(args);
        const policy = where ? store.get(where.path) : undefined;
        const held =
          choice !== 'inherit' && policy !== undefined
            ? heldByOperator(choice, operatorLimits(policy.rules))
            : [];
        const label =
          held.length > 0 ? trans.__('%1 (limited by the server)', name) : name;
        return args.isPalette
          ? trans.__('Agent Access of Notebook: %1', label)
          : label;
      },
      caption: args =>
        args.preset === 'inherit'
          ? trans.__(
              "Remove your own rule: the folder's access (or the default) applies"
            )
          : presetCaption(args.preset as never, trans),
      isEnabled: args => target(args) !== null,
      isToggled: args => {
        const where = target(args);
        const policy = where ? policyOf(where.path) : undefined;
        return (
          where !== null &&
          policy !== undefined &&
          args.preset !== 'inherit' &&
          chosenPreset(policy, where.path, where.kind) === args.preset
        );
      },
      execute: async args => {
        const where = target(args);
        const choice = args.preset as AccessChoice;
        if (
          where === null ||
          (choice !== 'inherit' && !PRESETS.includes(choice))
        ) {
          return;
        }
        try {
          await store.choose(where.path, where.kind, choice);
        } catch (error) {
          await showErrorMessage(
            trans.__('Agent access not changed'),
            error as Error
          );
        }
      }
    });
    commands.addCommand(PolicyCommandIDs.accessLimits, {
      label: args => {
        const where = target(args);
        const policy = where ? store.get(where.path) : undefined;
        if (where !== null && policy === undefined) {
          return store.error(where.path) !== null
            ? trans.__('Agent access could not be read')
            : trans.__('Reading the agent access…');
        }
        return (
          (policy && limitsLine(operatorLimits(policy.rules), trans)) ??
          trans.__('No server rule applies')
        );
      },
      isEnabled: () => false,
      execute: () => undefined
    });
    const accessMenu = (targetName: 'notebook' | 'browser') => {
      const menu = new Menu({ commands });
      menu.addClass('jp-xcsh-AgentAccessMenu');
      menu.title.label = trans.__('Agent Access');
      for (const preset of PRESETS) {
        menu.addItem({
          command: PolicyCommandIDs.access,
          args: { preset, target: targetName }
        });
      }
      menu.addItem({ type: 'separator' });
      menu.addItem({
        command: PolicyCommandIDs.access,
        args: { preset: 'inherit', target: targetName }
      });
      menu.addItem({ type: 'separator' });
      menu.addItem({
        command: PolicyCommandIDs.accessLimits,
        args: { target: targetName }
      });
      return menu;
    };
    const notebookMenu = accessMenu('notebook');
    if (toolbars !== null) {
      toolbars.addFactory<NotebookPanel>('Notebook', TOOLBAR_ITEM, panel => {
        const button = new AgentAccessButton(
          store,
          () => panel.context.path,
          () => {
            // The menu acts on the notebook whose button was clicked.
            if (tracker.currentWidget !== panel) {
              app.shell.activateById(panel.id);
            }
            return notebookMenu;
          },
          trans
        );
        panel.context.pathChanged.connect(() => {
          void store.refresh(panel.context.path);
          button.render();
        });
        return button;
      });
    }
    const browserMenu = accessMenu('browser');
    for (const selector of [
      '.jp-DirListing-item[data-isdir="true"]',
      '.jp-DirListing-item[data-file-type="notebook"]'
    ]) {
      app.contextMenu.addItem({
        type: 'submenu',
        submenu: browserMenu,
        selector,
        rank: 60
      });
    }
    for (const preset of PRESETS) {
      palette?.addItem({
        command: PolicyCommandIDs.access,
        args: { preset, target: 'notebook', isPalette: true },
        category: trans.__('Agent')
      });
    }

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
