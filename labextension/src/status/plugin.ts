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
 * shows the activity panel.
 */
export const statusPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-xcsh:status',
  description: 'Shows in the status bar how many agent calls are running.',
  autoStart: true,
  requires: [IStatusBar, IAgentActivity],
  activate: (
    app: JupyterFrontEnd,
    statusBar: IStatusBar,
    activity: IAgentActivity
  ): void => {
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
