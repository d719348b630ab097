/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The typed client of the jupyter-xcsh REST API: one function per endpoint.
 *
 * Every request and response type is taken from `jupyter_xcsh/rest-api.yml`, the one source of
 * truth of the wire format: `npm run build:api` generates `restapi.generated.ts` from it before
 * each build, so a field added there is typed here at once, and a field removed or renamed there
 * breaks the build of the code that uses it. The browser test `ui-tests/test_client_contract.py`
 * checks what these functions return, against a real server, with the same file.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { requestAPI, xcshUrl, XcshResponseError } from './request';
import type { components, paths } from './restapi.generated';
import type { IXcshClient } from './tokens';

/**
 * The schemas of `rest-api.yml`, by name.
 */
export type Schemas = components['schemas'];

/**
 * The JSON body an endpoint answers with for one status.
 */
type JsonResponse<
  P extends keyof paths,
  M extends 'get' | 'post',
  S extends number
> = paths[P][M] extends {
  responses: { [status in S]: { content: { 'application/json': infer T } } };
}
  ? T
  : never;

/* ---------------------------------------------------------------------------
 * Notebook tool: POST api/xcsh/notebook
 * ------------------------------------------------------------------------ */

/**
 * The body of a notebook tool call: one action.
 */
export type INotebookRequest = Schemas['NotebookRequest'];

/**
 * The body of a batch: several changes of one notebook applied in order as
 * one atomic change (all or nothing).
 */
export type INotebookBatchRequest = Schemas['NotebookBatchRequest'];

/**
 * One change of a batch: an edit, insert, delete or move without
 * `notebook_path` (the batch's).
 */
export type INotebookChange = Schemas['NotebookChange'];

/**
 * Anything the notebook tool takes: one action, or a batch.
 */
export type INotebookToolRequest = Schemas['NotebookToolRequest'];

/**
 * An action of the notebook tool.
 */
export type NotebookAction = INotebookRequest['action'];

/**
 * An nbformat cell type.
 */
export type CellType = NonNullable<INotebookRequest['cell_type']>;

/**
 * A cell source as nbformat stores it: one string or a list of lines.
 */
export type CellSource = Schemas['CellSource'];

/**
 * A whole nbformat cell, as a revert writes it back.
 */
export type INotebookCell = Schemas['NotebookCell'];

/**
 * Where a notebook tool call read or wrote: the live shared document of an
 * open collaboration room, or the file.
 */
export type NotebookVia = Schemas['Via'];

/**
 * The result of an edit, insert, delete or move.
 */
export type INotebookEditResult = Schemas['NotebookEditResult'];

/**
 * What one change did (the details of an edit, insert, delete or move; one
 * entry of a batch's `details.changes`).
 */
export type INotebookChangeDetails = Schemas['NotebookChangeDetails'];

/**
 * The result of a batch: one summary line per change, each change's details.
 */
export type INotebookBatchResult = Schemas['NotebookBatchResult'];

/**
 * The result of a find: the matching cells, with their matching lines.
 */
export type INotebookFindResult = Schemas['NotebookFindResult'];

/**
 * One matching cell of a find.
 */
export type INotebookFindMatch =
  INotebookFindResult['details']['matches'][number];

/**
 * The result of a read: a text view of a range of cells.
 */
export type INotebookReadResult = Schemas['NotebookReadResult'];

/**
 * One cell listed by a read (its `sourceHash` guards a later change).
 */
export type INotebookReadCell = INotebookReadResult['details']['cells'][number];

/**
 * The body of a 409 answer: the notebook or the addressed cell is not in the
 * state the request expected, a whole cell's id is taken, or its live document
 * stayed busy; nothing was changed.
 */
export type INotebookConflict = Schemas['NotebookConflict'];

/**
 * The result of a notebook tool call.
 */
export type NotebookResult = JsonResponse<'/api/xcsh/notebook', 'post', 200>;

/**
 * Edit, insert, delete, move, read or find cells of a notebook, or apply a
 * batch of changes.
 *
 * @param request - The notebook tool call: one action, or a batch.
 * @param settings - The server settings.
 * @returns The change made, the view read, the matches found, or the batch
 *   applied.
 *
 * @throws {XcshResponseError} On 400 (bad request, index out of range),
 *   403/404 (path refused or not found), 409 (the cell or notebook changed
 *   since it was read, a whole cell's id is taken, or the live document stayed
 *   busy: the body is an `INotebookConflict`, `reason` says which) and 422
 *   (invalid notebook). A batch's failing change says `Change <k> failed: `
 *   before its message, and nothing of the batch was applied.
 */
export async function notebook(
  request: INotebookToolRequest,
  settings: ServerConnection.ISettings
): Promise<NotebookResult> {
  const response = await requestAPI(
    'notebook',
    jsonInit('POST', request),
    settings
  );
  return (await response.json()) as NotebookResult;
}

/* ---------------------------------------------------------------------------
 * Artifacts: GET api/xcsh/artifacts/<id>
 * ------------------------------------------------------------------------ */

/**
 * Which lines of an artifact to read.
 */
export interface IArtifactRange {
  /**
   * The first line to read, 1-based.
   */
  offset?: number;

  /**
   * How many lines to read at most.
   */
  limit?: number;
}

/**
 * Read the text of an artifact (the full output of an execution, or a cell
 * kept for a revert).
 *
 * @param artifactId - The id, as in `artifact://<id>`.
 * @param settings - The server settings.
 * @param range - The lines to read; the whole artifact by default.
 * @returns The artifact's text.
 *
 * @throws {XcshResponseError} 400 for an id of the wrong form, 404 for an
 *   unknown one.
 */
export async function getArtifact(
  artifactId: string,
  settings: ServerConnection.ISettings,
  range: IArtifactRange = {}
): Promise<string> {
  const query: Record<string, number> = {};
  if (range.offset !== undefined) {
    query.offset = range.offset;
  }
  if (range.limit !== undefined) {
    query.limit = range.limit;
  }
  const queryString = URLExt.objectToQueryString(query);
  const response = await requestAPI(
    `artifacts/${encodeURIComponent(artifactId)}${queryString}`,
    { method: 'GET' },
    settings
  );
  return response.text();
}

/* ---------------------------------------------------------------------------
 * Python tool: POST api/xcsh/python
 * ------------------------------------------------------------------------ */

/**
 * The body of a python tool call.
 */
export type IPythonRequest = Schemas['PythonRequest'];

/**
 * The type of field `K` of a request whose schema offers alternatives (a call,
 * or a follow-up of a run with `run_id`).
 */
type FieldOf<T, K extends string> = T extends { [P in K]?: infer V }
  ? V
  : never;

/**
 * One cell of code to run.
 */
export type IPythonCell = NonNullable<FieldOf<IPythonRequest, 'cells'>>[number];

/**
 * How kernels are kept between calls.
 */
export type PythonMode = NonNullable<FieldOf<IPythonRequest, 'mode'>>;

/**
 * How a python call answers the kernel's prompts for input: `notice`
 * (default, the cell fails), `eof`, the answers in order, or `ask` (the call
 * returns with `awaitingInput` at the first prompt; see {@link answerInput}).
 */
export type StdinMode = NonNullable<FieldOf<IPythonRequest, 'stdin'>>;

/**
 * The outcome of one cell of a python tool call.
 */
export type IPythonCellResult = Schemas['PythonCell'];

/**
 * The state of one cell in a python tool call.
 */
export type PythonCellStatus = IPythonCellResult['status'];

/**
 * A status event emitted by the kernel-side `status(op, **data)` helper.
 */
export type IStatusEvent = Schemas['PythonStatusEvent'];

/**
 * An image displayed by the code.
 */
export type IPythonImage = Schemas['PythonImage'];

/**
 * The result of a python tool call. Errors, timeouts and cancellations are
 * results (`isError: true`), not HTTP errors.
 */
export type IPythonResult = Schemas['PythonResult'];

/**
 * The kernel session a python tool call ran in.
 */
export type IPythonSessionRef = IPythonResult['session'];

/**
 * A prompt the kernel waits on (stdin `ask`).
 */
export type IAwaitingInput = NonNullable<IPythonResult['awaitingInput']>;

/**
 * Run cells of code in a kernel of the server's own kernel manager.
 *
 * @param request - The python tool call.
 * @param settings - The server settings.
 * @returns The result, also when the code failed, timed out or was
 *   cancelled.
 *
 * @throws {XcshResponseError} On an invalid request, e.g. 400 for a missing
 *   working directory.
 */
export async function runPython(
  request: IPythonRequest,
  settings: ServerConnection.ISettings
): Promise<IPythonResult> {
  const response = await requestAPI(
    'python',
    jsonInit('POST', request),
    settings
  );
  return (await response.json()) as IPythonResult;
}

/**
 * Whether an interrupt found a call to cancel.
 */
export type IInterruptResult = JsonResponse<
  '/api/xcsh/calls/{callId}/interrupt',
  'post',
  200
>;

/**
 * Cancel one running call (a python call or a run in place); other calls of
 * its session or notebook go on. The call's result then says `cancelled`.
 *
 * @param callId - The `callId` of the call's result or of its lab events.
 * @param settings - The server settings.
 *
 * @throws {XcshResponseError} 404 when no such call is running.
 */
export async function interruptCall(
  callId: string,
  settings: ServerConnection.ISettings
): Promise<IInterruptResult> {
  const response = await requestAPI(
    `calls/${encodeURIComponent(callId)}/interrupt`,
    { method: 'POST' },
    settings
  );
  return (await response.json()) as IInterruptResult;
}

/* ---------------------------------------------------------------------------
 * Runs waiting for input: api/xcsh/runs/<runId>
 * ------------------------------------------------------------------------ */

/**
 * Answer the prompt a python call or a run in place waits on (stdin `ask`).
 *
 * @param runId - The `awaitingInput.runId` of the call's result.
 * @param value - The answer (a password prompt's is never echoed or stored).
 * @param settings - The server settings.
 * @returns What the call returns next: its result, or, at its next prompt,
 *   the output so far with `awaitingInput`.
 *
 * @throws {XcshResponseError} 404 for an unknown run, 409 when the run no
 *   longer waits for input.
 */
export async function answerInput(
  runId: string,
  value: string,
  settings: ServerConnection.ISettings
): Promise<IPythonResult | IRunResult> {
  const response = await requestAPI(
    `runs/${encodeURIComponent(runId)}/input`,
    jsonInit('POST', { value }),
    settings
  );
  return (await response.json()) as JsonResponse<
    '/api/xcsh/runs/{runId}/input',
    'post',
    200
  >;
}

/**
 * Follow a python call or a run in place waiting for input without answering.
 *
 * @param runId - The `awaitingInput.runId` of the call's result.
 * @param settings - The server settings.
 * @returns At once while it waits (with `awaitingInput`) or once ended (its
 *   result); else when it gets to its next prompt or its end.
 *
 * @throws {XcshResponseError} 404 for an unknown run.
 */
export async function followRun(
  runId: string,
  settings: ServerConnection.ISettings
): Promise<IPythonResult | IRunResult> {
  const response = await requestAPI(
    `runs/${encodeURIComponent(runId)}`,
    { method: 'GET' },
    settings
  );
  // Without `after` the answer is a result (`RunProgress` answers `runProgress`).
  return (await response.json()) as IPythonResult | IRunResult;
}

/**
 * A run's state and its events after a cursor (`RunProgress`).
 */
export type IRunProgress = Schemas['RunProgress'];

/**
 * A run's state and its events after the `after`-th, at once: a client whose
 * request timed out picks the run up where it left off.
 *
 * @param runId - The run's id (its `callId`).
 * @param after - The events already seen (0 for all; an earlier answer's `next`).
 * @param settings - The server settings.
 * @returns The state (`running`, `waiting`, `finished`), the events, the
 *   cursor `next`, and the result once finished.
 *
 * @throws {XcshResponseError} 400 for a cursor past the end, 404 for an
 *   unknown run.
 */
export async function runProgress(
  runId: string,
  after: number,
  settings: ServerConnection.ISettings
): Promise<IRunProgress> {
  const response = await requestAPI(
    `runs/${encodeURIComponent(runId)}?after=${after}`,
    { method: 'GET' },
    settings
  );
  return (await response.json()) as IRunProgress;
}

/* ---------------------------------------------------------------------------
 * Runs in place: POST api/xcsh/notebook/run
 * ------------------------------------------------------------------------ */

/**
 * The body of a run in place: the notebook and exactly one selection of cells
 * (`cell_id`, `cell_index`, `cell_ids`, `cell_index` + `end_index`,
 * `execution_count`, `all: true`, or `stale: true`).
 */
export type IRunRequest = Schemas['RunRequest'];

/**
 * The outcome of one cell of a run in place.
 */
export type IRunCellResult = Schemas['RunCell'];

/**
 * The state of one cell of a run in place (`skipped` too).
 */
export type RunCellStatus = IRunCellResult['status'];

/**
 * The result of a run in place: the python tool's, with the kernel and the
 * notebook. Errors, timeouts, a busy or dying kernel are results.
 */
export type IRunResult = Schemas['RunResult'];

/**
 * Run code cells of a notebook in its own kernel and write their outputs
 * back into it.
 *
 * @param request - The run.
 * @param settings - The server settings.
 * @returns The result, also when the code failed or the kernel was busy.
 *
 * @throws {XcshResponseError} On an invalid request, e.g. 400 when a single
 *   selected cell is not a code cell, 404 for a missing cell.
 */
export async function runNotebook(
  request: IRunRequest,
  settings: ServerConnection.ISettings
): Promise<IRunResult> {
  const response = await requestAPI(
    'notebook/run',
    jsonInit('POST', request),
    settings
  );
  return (await response.json()) as JsonResponse<
    '/api/xcsh/notebook/run',
    'post',
    200
  >;
}

/* ---------------------------------------------------------------------------
 * Files tool: POST api/xcsh/files
 * ------------------------------------------------------------------------ */

/**
 * The body of a files tool call: one `action` (list, read, write, mkdir,
 * rename, delete, search) and the fields it takes.
 */
export type IFilesRequest = Schemas['FilesRequest'];

/**
 * An action of the files tool.
 */
export type FilesAction = IFilesRequest['action'];

/**
 * The result of a files tool call: the text an agent reads, and `details`
 * (the entries listed, the lines read with the file's `hash`, what was
 * written, the matches found).
 */
export type IFilesResult = Schemas['FilesResult'];

/**
 * One entry of a folder, as `list` gives it.
 */
export type IFileEntry = Schemas['FileEntry'];

/**
 * One matching line, as `search` gives it.
 */
export type IFileMatch = NonNullable<
  IFilesResult['details']['matches']
>[number];

/**
 * The body of a 409 answer: the file is not what the request expected
 * (`stale_file`), exists already (`file_exists`, `exists`), or a folder to
 * delete is not empty (`folder_not_empty`); nothing was changed.
 */
export type IFilesConflict = Schemas['FilesConflict'];

/**
 * List, read, write, create, rename, delete or search files of the server's
 * contents root, through its contents manager.
 *
 * @param request - The files tool call.
 * @param settings - The server settings.
 * @returns What was listed, read, written, created, renamed, deleted or
 *   found.
 *
 * @throws {XcshResponseError} On 400 (bad request), 403 (a path outside the
 *   root, a hidden file to create or change, or no `write` permission), 404
 *   (not found, or hidden), 409 (an `IFilesConflict`) and 422 (a binary or
 *   too large file: the body's `details` give its size and mimetype).
 */
export async function files(
  request: IFilesRequest,
  settings: ServerConnection.ISettings
): Promise<IFilesResult> {
  const response = await requestAPI(
    'files',
    jsonInit('POST', request),
    settings
  );
  return (await response.json()) as JsonResponse<
    '/api/xcsh/files',
    'post',
    200
  >;
}

/* ---------------------------------------------------------------------------
 * Sessions: api/xcsh/sessions
 * ------------------------------------------------------------------------ */

/**
 * A kernel session of the python tool.
 */
export type ISessionModel = Schemas['PythonSession'];

/**
 * List the python tool's kernel sessions.
 *
 * @param settings - The server settings.
 * @returns The sessions, most recently used first.
 */
export async function listSessions(
  settings: ServerConnection.ISettings
): Promise<ISessionModel[]> {
  const response = await requestAPI('sessions', { method: 'GET' }, settings);
  const body = (await response.json()) as JsonResponse<
    '/api/xcsh/sessions',
    'get',
    200
  >;
  return body.sessions;
}

/**
 * Shut down a python tool session and its kernel.
 *
 * @param name - The session name.
 * @param settings - The server settings.
 *
 * @throws {XcshResponseError} 404 for an unknown session.
 */
export async function shutdownSession(
  name: string,
  settings: ServerConnection.ISettings
): Promise<void> {
  await requestAPI(
    `sessions/${encodeURIComponent(name)}`,
    { method: 'DELETE' },
    settings
  );
}

/**
 * Cancel the call running in a python tool session; that call's result then
 * says `cancelled`.
 *
 * @param name - The session name.
 * @param settings - The server settings.
 *
 * @throws {XcshResponseError} 404 for an unknown session.
 */
export async function interruptSession(
  name: string,
  settings: ServerConnection.ISettings
): Promise<IInterruptResult> {
  const response = await requestAPI(
    `sessions/${encodeURIComponent(name)}/interrupt`,
    { method: 'POST' },
    settings
  );
  return (await response.json()) as IInterruptResult;
}

/* ---------------------------------------------------------------------------
 * Kernel tool: POST api/xcsh/kernel
 * ------------------------------------------------------------------------ */

/**
 * The body of a kernel tool call: an action on a python session's kernel
 * (`session`) or a notebook's (`notebook_path`).
 */
export type IKernelRequest = Schemas['KernelRequest'];

/**
 * An action of the kernel tool.
 */
export type KernelAction = IKernelRequest['action'];

/**
 * The result of a kernel tool call: a text and its details.
 */
export type IKernelResult = Schemas['KernelResult'];

/**
 * One variable of a kernel's namespace (`variables`, `inspect`).
 */
export type IKernelVariable = Schemas['KernelVariable'];

/**
 * List or inspect a kernel's variables, or get its status, interrupt,
 * restart or change it; or list the python tool's sessions.
 *
 * @param request - The kernel tool call.
 * @param settings - The server settings.
 * @returns The result.
 *
 * @throws {XcshResponseError} 400 for a bad request, 404 for an unknown
 *   session or notebook, 409 for a busy kernel or a refused restart.
 */
export async function kernel(
  request: IKernelRequest,
  settings: ServerConnection.ISettings
): Promise<IKernelResult> {
  const response = await requestAPI(
    'kernel',
    jsonInit('POST', request),
    settings
  );
  return (await response.json()) as JsonResponse<
    '/api/xcsh/kernel',
    'post',
    200
  >;
}

/* ---------------------------------------------------------------------------
 * Activity history: GET api/xcsh/activity
 * ------------------------------------------------------------------------ */

/**
 * A page of the activity history: kept calls, oldest first.
 */
export type IActivityPage = JsonResponse<'/api/xcsh/activity', 'get', 200>;

/**
 * One call the activity history kept.
 */
export type IActivityEntry = Schemas['ActivityEntry'];

/**
 * Which calls of the activity history to read.
 */
export interface IActivityQuery {
  /** Only the calls on this notebook. */
  path?: string;
  /** The `cursor` of a page read before: only the calls kept after it. */
  since?: number;
  /** Most calls in the page (1 to 1000; the server's default 200). */
  limit?: number;
}

/**
 * Read the calls the server's activity history kept (docs/developers/contract.md §13).
 *
 * @param query - The filters.
 * @param settings - The server settings.
 * @returns The page; without `since`, the newest calls.
 *
 * @throws {XcshResponseError} 404 when the history is turned off.
 */
export async function activityHistory(
  query: IActivityQuery,
  settings: ServerConnection.ISettings
): Promise<IActivityPage> {
  const params = new URLSearchParams();
  if (query.path !== undefined) {
    params.set('path', query.path);
  }
  if (query.since !== undefined) {
    params.set('since', String(query.since));
  }
  if (query.limit !== undefined) {
    params.set('limit', String(query.limit));
  }
  const search = params.toString();
  const url = xcshUrl(settings, 'activity') + (search ? `?${search}` : '');
  const response = await ServerConnection.makeRequest(
    url,
    { method: 'GET' },
    settings
  );
  if (!response.ok) {
    throw await XcshResponseError.create(response);
  }
  return (await response.json()) as IActivityPage;
}

/* ---------------------------------------------------------------------------
 * Agent configurations: GET api/xcsh/mcp-config
 * ------------------------------------------------------------------------ */

/**
 * Each agent's MCP configuration for this server.
 */
export type IMcpConfig = JsonResponse<'/api/xcsh/mcp-config', 'get', 200>;

/**
 * One agent's configuration: its title, where it goes, the text.
 */
export type IMcpClientConfig = IMcpConfig['clients'][number];

/**
 * Read each agent's MCP configuration for this server (docs/developers/contract.md §10.4).
 *
 * @param showToken - Put the server's token in the texts (else a placeholder stands for it).
 * @param settings - The server settings.
 * @returns The endpoint's URL and every agent's configuration.
 *
 * @throws {XcshResponseError} 403 when the token may not be shown to this user.
 */
export async function mcpConfig(
  showToken: boolean,
  settings: ServerConnection.ISettings
): Promise<IMcpConfig> {
  const url =
    xcshUrl(settings, 'mcp-config') + (showToken ? '?show_token=true' : '');
  const response = await ServerConnection.makeRequest(
    url,
    { method: 'GET' },
    settings
  );
  if (!response.ok) {
    throw await XcshResponseError.create(response);
  }
  return (await response.json()) as IMcpConfig;
}

/* ---------------------------------------------------------------------------
 * The client object
 * ------------------------------------------------------------------------ */

/**
 * The default implementation of {@link IXcshClient}.
 */
export class XcshClient implements IXcshClient {
  /**
   * Create a client.
   *
   * @param options - The server settings; the page's own by default.
   */
  constructor(options: XcshClient.IOptions = {}) {
    this.serverSettings =
      options.serverSettings ?? ServerConnection.makeSettings();
  }

  readonly serverSettings: ServerConnection.ISettings;

  notebook(request: INotebookToolRequest): Promise<NotebookResult> {
    return notebook(request, this.serverSettings);
  }

  getArtifact(artifactId: string, range?: IArtifactRange): Promise<string> {
    return getArtifact(artifactId, this.serverSettings, range);
  }

  runPython(request: IPythonRequest): Promise<IPythonResult> {
    return runPython(request, this.serverSettings);
  }

  interruptCall(callId: string): Promise<IInterruptResult> {
    return interruptCall(callId, this.serverSettings);
  }

  listSessions(): Promise<ISessionModel[]> {
    return listSessions(this.serverSettings);
  }

  shutdownSession(name: string): Promise<void> {
    return shutdownSession(name, this.serverSettings);
  }

  interruptSession(name: string): Promise<IInterruptResult> {
    return interruptSession(name, this.serverSettings);
  }

  answerInput(
    runId: string,
    value: string
  ): Promise<IPythonResult | IRunResult> {
    return answerInput(runId, value, this.serverSettings);
  }

  followRun(runId: string): Promise<IPythonResult | IRunResult> {
    return followRun(runId, this.serverSettings);
  }

  runProgress(runId: string, after: number): Promise<IRunProgress> {
    return runProgress(runId, after, this.serverSettings);
  }

  runNotebook(request: IRunRequest): Promise<IRunResult> {
    return runNotebook(request, this.serverSettings);
  }

  files(request: IFilesRequest): Promise<IFilesResult> {
    return files(request, this.serverSettings);
  }

  kernel(request: IKernelRequest): Promise<IKernelResult> {
    return kernel(request, this.serverSettings);
  }

  activityHistory(query: IActivityQuery = {}): Promise<IActivityPage> {
    return activityHistory(query, this.serverSettings);
  }
}

/**
 * The namespace for {@link XcshClient} statics.
 */
export namespace XcshClient {
  /**
   * The options to create a client.
   */
  export interface IOptions {
    /**
     * The server settings; the page's own by default.
     */
    serverSettings?: ServerConnection.ISettings;
  }
}

/**
 * Build the request options of a call with a JSON body.
 */
function jsonInit(method: string, body: unknown): RequestInit {
  return {
    method,
    body: JSON.stringify(body),
    headers: { 'Content-Type': 'application/json' }
  };
}
