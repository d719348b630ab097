/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';

import { XcshClient } from './client';
import { IXcshClient } from './tokens';

export * from './client';
export * from './request';
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
    console.log('JupyterLab extension jupyter-xcsh is activated!');
    return client;
  }
};

export default [clientPlugin];
