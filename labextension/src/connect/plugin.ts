/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';
import { ITranslator } from '@jupyterlab/translation';
import { linkIcon } from '@jupyterlab/ui-components';

import { IAgentActivity } from '../tokens';
import { translationBundle } from '../translation';
import { showConnectDialog } from './dialog';

/**
 * The command that opens the "Connect an agent" dialog.
 */
export const CONNECT_COMMAND = 'jupyter-xcsh:connect-agent';

/**
 * "Connect an agent": a command in the palette, a launcher card and the Agent status item's
 * context menu, opening the dialog of `dialog.ts`.
 */
export const connectPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-xcsh:connect',
  description: 'Shows how to connect an agent to this server over MCP.',
  autoStart: true,
  optional: [IAgentActivity, ICommandPalette, ILauncher, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    activity: IAgentActivity | null,
    palette: ICommandPalette | null,
    launcher: ILauncher | null,
    translator: ITranslator | null
  ): void => {
    const trans = translationBundle(translator);
    app.commands.addCommand(CONNECT_COMMAND, {
      label: args =>
        args.isLauncher
          ? trans.__('Connect an agent')
          : trans.__('Connect an agent…'),
      caption: trans.__(
        'Configurations for Claude Code, Codex, Gemini CLI, VS Code, Cursor and Jupyter AI to use this server'
      ),
      icon: args => (args.isLauncher ? linkIcon : undefined),
      execute: () =>
        showConnectDialog(
          app.serviceManager.serverSettings,
          activity?.model ?? null,
          trans
        )
    });
    palette?.addItem({
      command: CONNECT_COMMAND,
      category: trans.__('Agent')
    });
    launcher?.add({
      command: CONNECT_COMMAND,
      category: trans.__('Other'),
      rank: 0
    });
    app.contextMenu.addItem({
      command: CONNECT_COMMAND,
      selector: '.jp-xcsh-AgentStatus',
      rank: 0
    });
  }
};
