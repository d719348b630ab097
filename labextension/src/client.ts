/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { requestAPI } from './request';
import type { IXcshClient } from './tokens';

/* ---------------------------------------------------------------------------
 * Notebook tool: POST api/xcsh/notebook
 * ------------------------------------------------------------------------ */

/**
 * An action of the notebook tool.
 */
export type NotebookAction = 'edit' | 'insert' | 'delete' | 'move' | 'read';

/**
 * An nbformat cell type.
 */
export type CellType = 'code' | 'markdown' | 'raw';

/**
 * A cell source as nbformat stores it: one string or a list of lines.
 */
export type CellSource = string | string[];

/**
 * The body of a notebook tool call.
 */
export interface INotebookRequest {
  /**
   * What to do with the notebook.
   */
  action: NotebookAction;

  /**
   * The notebook, relative to the contents root or absolute inside it.
   */
  notebook_path: string;

  /**
   * 0-based cell index. edit/delete/move need it or `cell_id`; insert needs
   * it; read starts there (default 0).
   */
  cell_index?: number;

  /**
   * nbformat 4.5 cell id, instead of `cell_index` (edit, delete, move, read).
   */
  cell_id?: string;

  /**
   * The new cell source; required for edit and insert (`""` allowed).
   */
  content?: string;

  /**
   * insert: the new cell's type (default `code`); edit: converts the cell
   * when it differs.
   */
  cell_type?: CellType;

  /**
   * move only: the cell's final position (0..N-1).
   */
  to_index?: number;

  /**
   * read only: the first cell index not shown (default the cell count).
   */
  end_index?: number;

  /**
   * read only: the size budget of the view (default and cap from config).
   */
  max_chars?: number;

  /**
   * edit, delete, move: the `sourceHash` the addressed cell must still have
   * (else 409 `stale_cell`).
   */
  expected_source_hash?: string;

  /**
   * Every change: the `revision` the notebook must still have (else 409
   * `stale_notebook`).
   */
  expected_revision?: string;

  /**
   * edit only: text that must occur exactly once in the cell (409 when
   * absent, 400 when ambiguous); only that occurrence is replaced by
   * `content`.
   */
  old_content?: string;
}

/**
 * Where a notebook tool call read or wrote: the live shared document of an
 * open collaboration room, or the file.
 */
export type NotebookVia = 'document' | 'file';

/**
 * The result of an edit, insert, delete or move.
 */
export interface INotebookEditResult {
  /**
   * The summary, e.g. `Replaced cell 2 (code). Notebook now has 5 cells.`
   */
  text: string;

  /**
   * What changed.
   */
  details: {
    action: Exclude<NotebookAction, 'read'>;
    cellIndex: number;
    cellType: string;
    totalCells: number;
    /**
     * The cell's source after the change; for delete, the removed source
     * exactly as it was stored.
     */
    cellSource: CellSource;
    cellId: string | null;
    /**
     * edit only, when the cell was converted to another type.
     */
    previousCellType?: string;
    /**
     * move only: where the cell was.
     */
    fromIndex?: number;
    /**
     * The notebook's `last_modified` after the save (null via `document`).
     */
    lastModified?: string | null;
    /**
     * The addressed cell's source hash after the change (delete: the removed
     * cell's): 16 hex digits of the sha256 of its joined source.
     */
    sourceHash: string;
    /**
     * The notebook's revision after the change.
     */
    revision: string;
    via: NotebookVia;
  };
}

/**
 * One cell listed by a read.
 */
export interface INotebookReadCell {
  index: number;
  cellId: string | null;
  cellType: string;
  executionCount?: number | null;
  /**
   * Send it back as `expected_source_hash` to change this cell safely.
   */
  sourceHash: string;
}

/**
 * The result of a read: a text view of a range of cells.
 */
export interface INotebookReadResult {
  /**
   * The view of the cells, meant for an agent to read.
   */
  text: string;

  /**
   * What the view covers.
   */
  details: {
    action: 'read';
    totalCells: number;
    startIndex: number;
    /**
     * The first cell index not shown; continue there when truncated.
     */
    endIndex: number;
    truncated: boolean;
    nbformat: string;
    lastModified?: string | null;
    /**
     * The first shown cell's source hash (null when no cell is shown).
     */
    sourceHash: string | null;
    /**
     * The notebook's revision; send it back as `expected_revision`.
     */
    revision: string;
    via: NotebookVia;
    cells: INotebookReadCell[];
  };
}

/**
 * The body of a 409 answer: the notebook or the addressed cell is not in the
 * state the request expected (or its live document stayed busy), and nothing
 * was changed.
 */
export interface INotebookConflict {
  message: string;
  reason: 'stale_cell' | 'stale_notebook' | 'document_busy';
  /**
   * stale_cell, stale_notebook: the addressed cell as it is now (cell fields
   * null when there is none).
   */
  details?: {
    cellIndex: number | null;
    cellId: string | null;
    cellType: string | null;
    cellSource: CellSource | null;
    sourceHash: string | null;
    revision: string;
    totalCells: number;
  };
}

/**
 * The result of a notebook tool call.
 */
export type NotebookResult = INotebookEditResult | INotebookReadResult;

/**
 * Edit, insert, delete, move or read cells of a notebook.
 *
 * @param request - The notebook tool call.
 * @param settings - The server settings.
 * @returns The change made, or the view read.
 *
 * @throws {ServerConnection.ResponseError} On 400 (bad request, index out of
 *   range), 403/404 (path refused or not found), 409 (a stale read: the body is
 *   an `INotebookConflict`) and 422 (invalid notebook).
 */
export async function notebook(
  request: INotebookRequest,
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
 * Which part of an artifact to read.
 */
export interface IArtifactRange {
  /**
   * Where to start reading.
   */
  offset?: number;

  /**
   * How much to read at most.
   */
  limit?: number;
}

/**
 * Read the text of an artifact (the full output of an execution).
 *
 * @param artifactId - The id, as in `artifact://<id>`.
 * @param settings - The server settings.
 * @param range - The part to read; the whole artifact by default.
 * @returns The artifact's text.
 *
 * @throws {ServerConnection.ResponseError} 404 for an unknown id.
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
 * One cell of code to run.
 */
export interface IPythonCell {
  /**
   * The code.
   */
  code: string;

  /**
   * A short title, shown in the combined text as `[k/n] <title>`.
   */
  title?: string;
}

/**
 * How kernels are kept between calls.
 */
export type PythonMode = 'session' | 'per-call';

/**
 * The body of a python tool call.
 */
export interface IPythonRequest {
  /**
   * The cells to run in order; the call stops at the first failing cell.
   */
  cells: IPythonCell[];

  /**
   * One deadline for the whole call, in seconds (default 30, clamped to
   * 1..600).
   */
  timeout?: number;

  /**
   * The working directory, relative to the contents root (default the root).
   */
  cwd?: string;

  /**
   * Restart the session's kernel before the first cell.
   */
  reset?: boolean;

  /**
   * The caller's session name (default `default`).
   */
  session?: string;

  /**
   * `session` keeps the kernel between calls; `per-call` starts and shuts
   * down a kernel for this call only. Default from the server's config.
   */
  mode?: PythonMode;

  /**
   * The kernel spec to start (default the server's default kernel).
   */
  kernel_name?: string;

  /**
   * How the kernel's prompts for input are answered: `notice` (default, the
   * cell fails), `eof`, the answers in order, or `ask` (the call returns
   * with `awaitingInput` at the first prompt; see {@link answerInput}).
   */
  stdin?: StdinMode;
}

/**
 * How a python call answers the kernel's prompts for input.
 */
export type StdinMode = 'notice' | 'eof' | 'ask' | string[];

/**
 * The state of one cell in a python tool call.
 */
export type PythonCellStatus = 'pending' | 'running' | 'complete' | 'error';

/**
 * A status event emitted by the kernel-side `status(op, **data)` helper.
 */
export interface IStatusEvent {
  /**
   * The operation the code reported.
   */
  op: string;

  /**
   * The keyword data passed along with it.
   */
  [key: string]: unknown;
}

/**
 * The outcome of one cell of a python tool call.
 */
export interface IPythonCellResult {
  index: number;
  title: string;
  status: PythonCellStatus;
  output: string;
  exitCode: number | null;
  durationMs: number | null;
  statusEvents: IStatusEvent[];
}

/**
 * An image displayed by the code; every one is kept whole as an artifact,
 * a few are inlined within a model's budget.
 */
export interface IPythonImage {
  /**
   * The MIME type of `data` (of the image as displayed when omitted).
   */
  mimeType: string;

  /**
   * The image, base64-encoded; only when inlined.
   */
  data?: string;

  /**
   * Pixels (null when unknown).
   */
  width: number | null;
  height: number | null;

  /**
   * Size of the image file.
   */
  bytes: number;

  /**
   * The image as displayed, whole (`artifact://<id>`).
   */
  artifactId: string | null;

  /**
   * Not inlined (past the budget, or an SVG).
   */
  omitted: boolean;

  /**
   * The image as displayed, when the inlined one was downscaled.
   */
  original?: {
    mimeType: string;
    width: number | null;
    height: number | null;
    bytes: number;
  };
}

/**
 * A prompt the kernel waits on (stdin `ask`).
 */
export interface IAwaitingInput {
  /**
   * Where to answer: `POST api/xcsh/runs/<runId>/input`.
   */
  runId: string;

  /**
   * The prompt the code gave, e.g. `name? `.
   */
  prompt: string;

  /**
   * A password prompt: its answer is never echoed or stored.
   */
  password: boolean;
}

/**
 * The kernel session a python tool call ran in.
 */
export interface IPythonSessionRef {
  name: string;
  kernelId: string;
  restartCount: number;
}

/**
 * The result of a python tool call. Errors, timeouts and cancellations are
 * results (`isError: true`), not HTTP errors.
 */
export interface IPythonResult {
  /**
   * The combined text output, sanitized and possibly truncated to its tail.
   */
  text: string;
  isError: boolean;
  cancelled: boolean;
  timedOut: boolean;
  stdinRequested: boolean;

  /**
   * Set while the kernel waits for an answer: the result is then partial.
   */
  awaitingInput?: IAwaitingInput;
  cells: IPythonCellResult[];
  images: IPythonImage[];
  jsonOutputs: unknown[];
  statusEvents: IStatusEvent[];

  /**
   * Whether the visible output was cut to its tail; the full output is then
   * in the artifact.
   */
  truncated: boolean;
  totalLines: number;
  totalBytes: number;
  outputLines: number;
  outputBytes: number;

  /**
   * Set when the output spilled to an artifact (`artifact://<id>`).
   */
  artifactId?: string;

  /**
   * The artifact's path in the contents root, when the output spilled.
   */
  artifactPath?: string;
  session: IPythonSessionRef;
}

/**
 * Run cells of code in a kernel of the server's own kernel manager.
 *
 * @param request - The python tool call.
 * @param settings - The server settings.
 * @returns The result, also when the code failed, timed out or was
 *   cancelled.
 *
 * @throws {ServerConnection.ResponseError} On an invalid request, e.g. 400
 *   for a missing working directory.
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

/* ---------------------------------------------------------------------------
 * Runs waiting for input: api/xcsh/runs/<runId>
 * ------------------------------------------------------------------------ */

/**
 * Answer the prompt a python call waits on (stdin `ask`).
 *
 * @param runId - The `awaitingInput.runId` of the call's result.
 * @param value - The answer (a password prompt's is never echoed or stored).
 * @param settings - The server settings.
 * @returns What the call returns next: its result, or, at its next prompt,
 *   the output so far with `awaitingInput`.
 *
 * @throws {ServerConnection.ResponseError} 404 for an unknown run, 409 when
 *   the run no longer waits for input.
 */
export async function answerInput(
  runId: string,
  value: string,
  settings: ServerConnection.ISettings
): Promise<IPythonResult> {
  const response = await requestAPI(
    `runs/${encodeURIComponent(runId)}/input`,
    jsonInit('POST', { value }),
    settings
  );
  return (await response.json()) as IPythonResult;
}

/**
 * Follow a python call waiting for input without answering it.
 *
 * @param runId - The `awaitingInput.runId` of the call's result.
 * @param settings - The server settings.
 * @returns At once while it waits (with `awaitingInput`) or once ended (its
 *   result); else when it gets to its next prompt or its end.
 *
 * @throws {ServerConnection.ResponseError} 404 for an unknown run.
 */
export async function followRun(
  runId: string,
  settings: ServerConnection.ISettings
): Promise<IPythonResult> {
  const response = await requestAPI(
    `runs/${encodeURIComponent(runId)}`,
    { method: 'GET' },
    settings
  );
  return (await response.json()) as IPythonResult;
}

/* ---------------------------------------------------------------------------
 * Sessions: api/xcsh/sessions
 * ------------------------------------------------------------------------ */

/**
 * A kernel session of the python tool.
 */
export interface ISessionModel {
  name: string;
  cwd: string;
  kernelId: string | null;
  busy: boolean;
  queueLength: number;
  /**
   * When the session last ran a call (ISO 8601).
   */
  lastUsed: string;
  restartCount: number;
}

/**
 * List the python tool's kernel sessions.
 *
 * @param settings - The server settings.
 * @returns The sessions.
 */
export async function listSessions(
  settings: ServerConnection.ISettings
): Promise<ISessionModel[]> {
  const response = await requestAPI('sessions', { method: 'GET' }, settings);
  return (await response.json()) as ISessionModel[];
}

/**
 * Shut down a python tool session and its kernel.
 *
 * @param name - The session name.
 * @param settings - The server settings.
 *
 * @throws {ServerConnection.ResponseError} 404 for an unknown session.
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
 * @throws {ServerConnection.ResponseError} 404 for an unknown session.
 */
export async function interruptSession(
  name: string,
  settings: ServerConnection.ISettings
): Promise<void> {
  await requestAPI(
    `sessions/${encodeURIComponent(name)}/interrupt`,
    { method: 'POST' },
    settings
  );
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

  notebook(request: INotebookRequest): Promise<NotebookResult> {
    return notebook(request, this.serverSettings);
  }

  getArtifact(artifactId: string, range?: IArtifactRange): Promise<string> {
    return getArtifact(artifactId, this.serverSettings, range);
  }

  runPython(request: IPythonRequest): Promise<IPythonResult> {
    return runPython(request, this.serverSettings);
  }

  listSessions(): Promise<ISessionModel[]> {
    return listSessions(this.serverSettings);
  }

  shutdownSession(name: string): Promise<void> {
    return shutdownSession(name, this.serverSettings);
  }

  interruptSession(name: string): Promise<void> {
    return interruptSession(name, this.serverSettings);
  }

  answerInput(runId: string, value: string): Promise<IPythonResult> {
    return answerInput(runId, value, this.serverSettings);
  }

  followRun(runId: string): Promise<IPythonResult> {
    return followRun(runId, this.serverSettings);
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
