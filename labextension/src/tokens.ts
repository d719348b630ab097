/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { ServerConnection } from '@jupyterlab/services';
import { Token } from '@lumino/coreutils';
import type { ISignal } from '@lumino/signaling';
import type { Widget } from '@lumino/widgets';

import type {
  IActivityPage,
  IActivityQuery,
  IArtifactRange,
  IFilesRequest,
  IFilesResult,
  IInterruptResult,
  IKernelRequest,
  IKernelResult,
  INotebookToolRequest,
  IPythonRequest,
  IPythonResult,
  IRunRequest,
  IRunResult,
  ISessionModel,
  NotebookResult
} from './client';
import type { ActivityModel } from './core/activity';

/**
 * The jupyter-xcsh REST API, bound to one server.
 */
export interface IXcshClient {
  /**
   * The settings of the server the client talks to.
   */
  readonly serverSettings: ServerConnection.ISettings;

  /**
   * Edit, insert, delete, move, read or find cells of a notebook, or apply a
   * batch of changes as one.
   */
  notebook(request: INotebookToolRequest): Promise<NotebookResult>;

  /**
   * Read the text of an artifact.
   */
  getArtifact(artifactId: string, range?: IArtifactRange): Promise<string>;

  /**
   * Run cells of code in a server kernel.
   */
  runPython(request: IPythonRequest): Promise<IPythonResult>;

  /**
   * Cancel one running call, python or run in place (by its `callId`).
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
   * Answer the prompt a python call or a run in place waits on (stdin `ask`).
   */
  answerInput(
    runId: string,
    value: string
  ): Promise<IPythonResult | IRunResult>;

  /**
   * Follow a call waiting for input, without answering.
   */
  followRun(runId: string): Promise<IPythonResult | IRunResult>;

  /**
   * Run code cells of a notebook in its own kernel, outputs written back.
   */
  runNotebook(request: IRunRequest): Promise<IRunResult>;

  /**
   * List, read, write, create, rename, delete or search files of the
   * contents root.
   */
  files(request: IFilesRequest): Promise<IFilesResult>;

  /**
   * Inspect or control a python session's or a notebook's kernel.
   */
  kernel(request: IKernelRequest): Promise<IKernelResult>;

  /**
   * Read the calls the server's activity history kept (404 when it is off).
   */
  activityHistory(query?: IActivityQuery): Promise<IActivityPage>;
}

/**
 * The token of the jupyter-xcsh client, for plugins that call the server API.
 */
export const IXcshClient = new Token<IXcshClient>(
  'jupyter-xcsh:IXcshClient',
  'The typed client of the jupyter-xcsh REST API.'
);

/**
 * A mark on a cell that an agent changed (or ran), shown in open notebooks.
 */
export interface ICellMark {
  /** The notebook's path, relative to the contents root. */
  readonly path: string;
  /** The cell's id; `null` in notebooks without ids (then `cellIndex`). */
  readonly cellId: string | null;
  /** The cell's index right after the call. */
  readonly cellIndex: number;
  /** What the agent did: `edit`, `insert`, `move`, `restore`, `run`, ... */
  readonly action: string;
  /** The call that did it. */
  readonly callId: string;
  /** When (ms since the epoch). */
  readonly time: number;
  /**
   * The source the call left in the cell; the mark goes once the cell holds
   * anything else (a person edited it). `null` takes the cell's source when
   * the mark is first shown (a run, which leaves the source as it is).
   */
  readonly source: string | null;
}

/**
 * The marks of agent-changed cells, for every notebook.
 */
export interface ICellMarks {
  /**
   * Emitted with a notebook's path when its marks change.
   */
  readonly changed: ISignal<ICellMarks, string>;

  /**
   * Mark a cell (a newer mark of the same cell replaces the older one).
   */
  add(mark: ICellMark): void;

  /**
   * Remove every mark of a call (e.g. a call that was reverted).
   */
  removeCall(callId: string): void;

  /**
   * Remove the mark a call left on one cell (a change kept or undone in review).
   */
  removeCell?(path: string, cellId: string, callId: string): void;

  /**
   * Remove the marks of a call and never mark for it again (e.g. a revert,
   * which is a person's change, not an agent's).
   */
  ignoreCall(callId: string): void;

  /**
   * Take one event of the server's activity history: its marks come back for
   * cells that still hold what the agent left.
   */
  restore(emission: unknown): void;
}

/**
 * The token of the cell marks, for plugins that mark cells (runs in place).
 */
export const ICellMarks = new Token<ICellMarks>(
  'jupyter-xcsh:ICellMarks',
  'The marks of cells that agents changed, shown in open notebooks.'
);

/**
 * The agent activity the lab shows: the calls, and the panel listing them.
 */
export interface IAgentActivity {
  /**
   * The calls of agents, newest first.
   */
  readonly model: ActivityModel;

  /**
   * Show the activity panel.
   */
  show(): void;

  /**
   * Show a section of another plugin's in the panel, above the calls (the approvals).
   */
  addSection?(section: Widget): void;
}

/**
 * The token of the agent activity, for plugins that show it elsewhere (the
 * status bar).
 */
export const IAgentActivity = new Token<IAgentActivity>(
  'jupyter-xcsh:IAgentActivity',
  'The calls of agents and the panel listing them.'
);

/**
 * Agent edits followed in the open notebooks (`livesync.ts`).
 */
export interface ILiveSync {
  /**
   * Resolves once the notebooks open in the lab have followed the notebook call `callId`
   * (at once when none is open; after `timeout` ms at the latest).
   */
  whenFollowed(callId: string, timeout?: number): Promise<void>;
}

/**
 * The token of the live sync, for plugins that wait for the open notebook to show a call.
 */
export const ILiveSync = new Token<ILiveSync>(
  'jupyter-xcsh:ILiveSync',
  'Agent edits followed in the notebooks open in the lab.'
);
