/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { IStatusBar } from '@jupyterlab/statusbar';

import { IAgentActivity } from '../tokens';
import { AgentStatus, AgentStatusModel } from './agentstatus';

/**
 * The `Agent` status bar item: how many agent calls are running; a click
 * shows the activity panel. Where the front end has no status bar (Notebook 7),
 * there is no item and nothing else changes.
 */
export const statusPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-xcsh:status',
  description: 'Shows in the status bar how many agent calls are running.',
  autoStart: true,
  requires: [IAgentActivity],
  optional: [IStatusBar],
  activate: (
    app: JupyterFrontEnd,
    activity: IAgentActivity,
    statusBar: IStatusBar | null
  ): void => {
    if (!statusBar) {
      return;
    }
    const item = new AgentStatus(new AgentStatusModel(activity.model), () =>
      activity.show()
    );
    statusBar.registerStatusItem('jupyter-xcsh:agent-status', {
      item,
      align: 'left',
      rank: 50
    });
  }
};
