/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { IStatusBar } from '@jupyterlab/statusbar';
import { ITranslator } from '@jupyterlab/translation';

import { IAgentActivity } from '../tokens';
import { translationBundle } from '../translation';
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
  optional: [IStatusBar, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    activity: IAgentActivity,
    statusBar: IStatusBar | null,
    translator: ITranslator | null
  ): void => {
    if (!statusBar) {
      return;
    }
    const item = new AgentStatus(
      new AgentStatusModel(activity.model),
      () => activity.show(),
      translationBundle(translator)
    );
    statusBar.registerStatusItem('jupyter-xcsh:agent-status', {
      item,
      align: 'left',
      rank: 50
    });
  }
};
