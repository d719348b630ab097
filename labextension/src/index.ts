/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';

import { INotebookTracker } from '@jupyterlab/notebook';
import { ITranslator } from '@jupyterlab/translation';

import { XcshClient } from './client';
import { connectPlugin } from './connect/plugin';
import { LiveSync } from './livesync';
import { marksPlugin } from './marks/plugin';
import { openNotebooks } from './notebooksync';
import { RunSync } from './runsync';
import { activityPlugin } from './panel/plugin';
import { policyPlugin } from './policy/plugin';
import { reviewPlugin } from './review/plugin';
import { statusPlugin } from './status/plugin';
import { ILiveSync, IXcshClient } from './tokens';
import { translationBundle } from './translation';

export * from './client';
export * from './livesync';
export * from './request';
export * from './runsync';
export * from './tokens';

/**
 * Provides the client of the jupyter-xcsh server API to other plugins.
 */
const clientPlugin: JupyterFrontEndPlugin<IXcshClient> = {
  id: 'jupyter-xcsh:client',
  description: 'Provides the typed client of the jupyter-xcsh REST API.',
  autoStart: true,
  provides: IXcshClient,
  activate: (app: JupyterFrontEnd): IXcshClient => {
    const client = new XcshClient({
      serverSettings: app.serviceManager.serverSettings
    });
    return client;
  }
};

/**
 * Shows agent edits in the notebooks open in the lab (see `livesync.ts` for the mechanism).
 */
const liveSyncPlugin: JupyterFrontEndPlugin<ILiveSync> = {
  id: 'jupyter-xcsh:livesync',
  description: 'Applies agent edits to the notebooks open in the lab.',
  autoStart: true,
  requires: [INotebookTracker],
  provides: ILiveSync,
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker): ILiveSync => {
    const sync = new LiveSync(app, openNotebooks(tracker));
    sync.start();
    return sync;
  }
};

/**
 * Shows the outputs of agents' runs in place in the notebooks open in the lab (`runsync.ts`).
 */
const runSyncPlugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-xcsh:runsync',
  description: 'Shows the outputs of runs in place in open notebooks.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ITranslator],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    translator: ITranslator | null
  ): void => {
    new RunSync(
      app,
      openNotebooks(tracker),
      translationBundle(translator)
    ).start();
  }
};

export default [
  clientPlugin,
  liveSyncPlugin,
  runSyncPlugin,
  marksPlugin,
  activityPlugin,
  reviewPlugin,
  statusPlugin,
  connectPlugin,
  policyPlugin
];
