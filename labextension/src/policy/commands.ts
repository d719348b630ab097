/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The policy plugin's commands, and the "Agent access" menu of notebooks (the notebook
 * toolbar's item, the palette) and of folders and notebooks (the file browser's context menu).
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import {
  type ICommandPalette,
  type IToolbarWidgetRegistry,
  showErrorMessage
} from '@jupyterlab/apputils';
import type { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { Menu } from '@lumino/widgets';

import {
  type AccessChoice,
  AgentAccessButton,
  type PolicyStore
} from './access';
import {
  chosenPreset,
  heldByOperator,
  limitsLine,
  operatorLimits,
  PRESETS,
  presetCaption,
  presetLabel
} from './presets';
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
 * What the Agent access commands need.
 */
export interface IAccessCommandsOptions {
  app: JupyterFrontEnd;
  tracker: INotebookTracker;
  browsers: IFileBrowserFactory | null;
  toolbars: IToolbarWidgetRegistry | null;
  palette: ICommandPalette | null;
  /** The policies of the paths shown. */
  store: PolicyStore;
  trans: TranslationBundle;
}

/**
 * Add the Agent access commands, the notebook toolbar's item, the file browser's menu and
 * the palette's items.
 */
export function addAccessCommands(options: IAccessCommandsOptions): void {
  const { app, tracker, browsers, toolbars, palette, store, trans } = options;
  const { commands } = app;
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
}
