/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { ServerConnection } from '@jupyterlab/services';
import { Token } from '@lumino/coreutils';

import type {
  IArtifactRange,
  IInterruptResult,
  INotebookRequest,
  IPythonRequest,
  IPythonResult,
  ISessionModel,
  NotebookResult
} from './client';

/**
 * The jupyter-xcsh REST API, bound to one server.
 */
export interface IXcshClient {
  /**
   * The settings of the server the client talks to.
   */
  readonly serverSettings: ServerConnection.ISettings;

  /**
   * Edit, insert, delete, move or read cells of a notebook.
   */
  notebook(request: INotebookRequest): Promise<NotebookResult>;

  /**
   * Read the text of an artifact.
   */
  getArtifact(artifactId: string, range?: IArtifactRange): Promise<string>;

  /**
   * Run cells of code in a server kernel.
   */
  runPython(request: IPythonRequest): Promise<IPythonResult>;

  /**
   * Cancel one running python call (by the `callId` of its events).
   */
  interruptCall(callId: string): Promise<IInterruptResult>;

  /**
   * List the python tool's kernel sessions.
   */
  listSessions(): Promise<ISessionModel[]>;

  /**
   * Shut down a python tool session.
   */
  shutdownSession(name: string): Promise<void>;

  /**
   * Cancel the call running in a python tool session.
   */
  interruptSession(name: string): Promise<IInterruptResult>;

  /**
   * Answer the prompt a python call waits on (stdin `ask`).
   */
  answerInput(runId: string, value: string): Promise<IPythonResult>;

  /**
   * Follow a python call waiting for input, without answering.
   */
  followRun(runId: string): Promise<IPythonResult>;
}

/**
 * The token of the jupyter-xcsh client, for plugins that call the server API.
 */
export const IXcshClient = new Token<IXcshClient>(
  'jupyter-xcsh:IXcshClient',
  'The typed client of the jupyter-xcsh REST API.'
);
