/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * Parsing of the server's jupyter-xcsh event emissions into typed events.
 *
 * Everything that arrives on the event bus is untrusted: a field of the wrong
 * type is dropped (or the whole emission ignored when it is essential), long
 * strings and lists are cut, and nothing here ever throws.
 */

import {
  NOTEBOOK_EVENT_V1_ID,
  PYTHON_EVENT_V1_ID,
  RUN_EVENT_V1_ID,
  type NotebookEventV1,
  type PythonEventV1
} from '../events.generated';
import { terminalText } from './terminal';

/**
 * The schema id of the notebook tool's events.
 */
export const NOTEBOOK_SCHEMA_ID = NOTEBOOK_EVENT_V1_ID;

/**
 * The schema id of the python tool's events.
 */
export const PYTHON_SCHEMA_ID = PYTHON_EVENT_V1_ID;

/**
 * The schema id of the events of runs in place (shown as python calls on a notebook).
 */
export const RUN_SCHEMA_ID = RUN_EVENT_V1_ID;

/**
 * Bounds applied while parsing, so one odd emission cannot exhaust the page.
 */
export namespace Limits {
  /** Longest id, action, path, session or type string kept. */
  export const NAME_CHARS = 1024;
  /** Longest cell source or code kept (the server cuts sources to 64 KiB). */
  export const SOURCE_CHARS = 65536;
  /** Longest output tail kept (the server sends at most 4 KiB). */
  export const TAIL_CHARS = 16384;
  /** Longest error or result text kept. */
  export const TEXT_CHARS = 16384;
  /** Largest cell index accepted, and most cells per call. */
  export const MAX_CELLS = 1000;
  /** Longest base64 image kept (the server omits images past 1 MiB). */
  export const IMAGE_CHARS = 2 * 1024 * 1024;
  /**
   * Largest cell-as-it-was kept, as JSON text (the server sends at most
   * 64 KiB, and an artifact id beyond).
   */
  export const CELL_JSON_CHARS = 128 * 1024;
  /** Most changes of one batch kept (the server takes at most 100). */
  export const MAX_CHANGES = 100;
}

/**
 * A payload's fields as parsed, from the types generated from the event
 * schemas (`events.generated.ts`): each optional field is present, `null` when
 * the server left it out or sent something malformed.
 */
export type Parsed<T> = {
  [K in keyof T]-?: undefined extends T[K]
    ? Exclude<T[K], undefined> | null
    : T[K];
};

/**
 * One change of a batch as the server sends it.
 */
type WireChange = NonNullable<NotebookEventV1['changes']>[number];

/**
 * One change of a batch, with the fields a single change's event has
 * (`source` is `null` when the batch's event had no room left for it).
 */
export interface INotebookChangeEvent extends Omit<
  Parsed<WireChange>,
  'restored'
> {
  /** The change wrote a whole cell (a revert), outputs and metadata included. */
  restored: boolean;
}

/**
 * A finished notebook tool call.
 */
export interface INotebookCallEvent extends Omit<
  Parsed<NotebookEventV1>,
  'restored' | 'changes'
> {
  kind: 'notebook';
  /** When the server emitted it (ms since the epoch). */
  time: number;
  /** The call wrote a whole cell (a revert), outputs and metadata included. */
  restored: boolean;
  /**
   * A batch (`action` is `batch`): its changes in the order they were
   * applied; `null` for any other call.
   */
  changes: INotebookChangeEvent[] | null;
}

/**
 * The state of one cell of a python tool call.
 */
export type CellStatus =
  'pending' | 'running' | 'complete' | 'error' | 'skipped';

/**
 * A cell as announced when a python call starts.
 */
export type IPythonCellSpec = Required<
  NonNullable<PythonEventV1['cells']>[number]
>;

/**
 * The name of a python event, checked against the schema's `event` enum.
 */
type EventName<T extends PythonEventV1['event']> = T;

/**
 * Something a python cell displayed.
 */
export type PythonDisplay =
  | {
      kind: 'image';
      mimeType: string;
      /** base64, absent when the server left out a large image. */
      data: string | null;
      bytes: number | null;
      width: number | null;
      height: number | null;
      /** Where the whole image is kept (a file of the contents root). */
      artifactPath: string | null;
    }
  | { kind: 'json'; data: unknown }
  | { kind: 'status'; data: unknown };

/**
 * The outcome of one cell, as the final result reports it.
 */
export interface IPythonCellOutcome {
  index: number;
  status: CellStatus | null;
  durationMs: number | null;
  exitCode: number | null;
}

/**
 * The final result of a python call, as the finished event carries it.
 */
export interface IPythonCallResult {
  text: string;
  isError: boolean;
  cancelled: boolean;
  timedOut: boolean;
  truncated: boolean;
  totalLines: number | null;
  totalBytes: number | null;
  artifactId: string | null;
  artifactPath: string | null;
  durationMs: number | null;
  cells: IPythonCellOutcome[];
}

/**
 * The fields every python tool event has.
 */
interface IPythonEventBase {
  kind: 'python';
  callId: string;
  time: number;
  session: string | null;
  /**
   * The notebook of a run in place; null for a python tool call.
   */
  path: string | null;
}

/**
 * A python call was accepted.
 */
export interface IPythonStartedEvent extends IPythonEventBase {
  event: EventName<'started'>;
  cells: IPythonCellSpec[];
  /** The agent that made the call, as it names itself; null when unnamed. */
  agent: string | null;
}

/**
 * A cell of a python call changed state.
 */
export interface IPythonCellEvent extends IPythonEventBase {
  event: EventName<'cell'>;
  cellIndex: number;
  status: CellStatus;
}

/**
 * The latest output tail of a cell (it replaces the previous one).
 */
export interface IPythonChunkEvent extends IPythonEventBase {
  event: EventName<'chunk'>;
  cellIndex: number;
  text: string;
}

/**
 * A cell displayed an image, a JSON value or a status event.
 */
export interface IPythonDisplayEvent extends IPythonEventBase {
  event: EventName<'display'>;
  /** null when the server did not say which cell. */
  cellIndex: number | null;
  display: PythonDisplay;
}

/**
 * A prompt for input, waiting for an answer (stdin `ask`) or no longer.
 */
export interface IPythonInputState extends Required<
  Omit<NonNullable<PythonEventV1['input']>, 'runId'>
> {
  /** Where to answer (`waiting` only). */
  runId: string | null;
}

/**
 * The kernel waits for an answer, or stopped waiting.
 */
export interface IPythonInputEvent extends IPythonEventBase {
  event: EventName<'input'>;
  cellIndex: number | null;
  input: IPythonInputState;
}

/**
 * A python call ended.
 */
export interface IPythonFinishedEvent extends IPythonEventBase {
  event: EventName<'finished'>;
  result: IPythonCallResult;
}

/**
 * Any python tool event.
 */
export type PythonEvent =
  | IPythonStartedEvent
  | IPythonCellEvent
  | IPythonChunkEvent
  | IPythonDisplayEvent
  | IPythonInputEvent
  | IPythonFinishedEvent;

/**
 * Any event the activity panel understands.
 */
export type XcshEvent = INotebookCallEvent | PythonEvent;

/**
 * Parse one emission of the server's event bus.
 *
 * @param emission - What `app.serviceManager.events.stream` emitted.
 * @returns The typed event, or `null` for another schema, an unknown event
 *   or a malformed payload.
 */
export function parseEmission(emission: unknown): XcshEvent | null {
  try {
    if (!isRecord(emission)) {
      return null;
    }
    if (emission.schema_id === NOTEBOOK_SCHEMA_ID) {
      return parseNotebookEvent(emission);
    }
    if (emission.schema_id === PYTHON_SCHEMA_ID) {
      return parsePythonEvent(emission);
    }
    if (emission.schema_id === RUN_SCHEMA_ID) {
      const event = parsePythonEvent(emission);
      const path = name(emission.path);
      return event === null || path === null ? null : { ...event, path };
    }
  } catch {
    // A getter or proxy that throws is as malformed as anything else.
  }
  return null;
}

function parseNotebookEvent(
  raw: Record<string, unknown>
): INotebookCallEvent | null {
  const callId = name(raw.callId);
  const action = name(raw.action);
  const path = name(raw.path);
  const status = raw.status;
  if (!callId || action === null || path === null) {
    return null;
  }
  if (status !== 'ok' && status !== 'error') {
    return null;
  }
  return {
    kind: 'notebook',
    callId,
    time: timestamp(raw.__timestamp__),
    action,
    path,
    status,
    cellIndex: index(raw.cellIndex, Number.MAX_SAFE_INTEGER),
    fromIndex: index(raw.fromIndex, Number.MAX_SAFE_INTEGER),
    cellId: name(raw.cellId),
    cellType: name(raw.cellType),
    source: text(raw.source, Limits.SOURCE_CHARS),
    totalCells: index(raw.totalCells, Number.MAX_SAFE_INTEGER),
    lastModified: name(raw.lastModified),
    error: nullable(text(raw.error, Limits.TEXT_CHARS), terminalText),
    sourceHash: name(raw.sourceHash),
    revision: name(raw.revision),
    previousCell: cellJson(raw.previousCell),
    previousCellArtifactId: name(raw.previousCellArtifactId),
    restored: raw.restored === true,
    changes: action === 'batch' ? batchChanges(raw.changes) : null,
    agent: nullable(text(raw.agent, Limits.TEXT_CHARS), terminalText),
    traceparent: name(raw.traceparent)
  };
}

/**
 * The changes of a batch event (at most `Limits.MAX_CHANGES`); malformed
 * entries are dropped.
 */
function batchChanges(raw: unknown): INotebookChangeEvent[] {
  if (!Array.isArray(raw)) {
    return [];
  }
  const changes: INotebookChangeEvent[] = [];
  for (const item of raw.slice(0, Limits.MAX_CHANGES)) {
    const action = isRecord(item) ? name(item.action) : null;
    if (!isRecord(item) || action === null) {
      continue;
    }
    changes.push({
      action,
      cellIndex: index(item.cellIndex, Number.MAX_SAFE_INTEGER),
      fromIndex: index(item.fromIndex, Number.MAX_SAFE_INTEGER),
      cellId: name(item.cellId),
      cellType: name(item.cellType),
      source: text(item.source, Limits.SOURCE_CHARS),
      sourceHash: name(item.sourceHash),
      revision: name(item.revision),
      previousCell: cellJson(item.previousCell),
      previousCellArtifactId: name(item.previousCellArtifactId),
      restored: item.restored === true
    });
  }
  return changes;
}

/**
 * A whole nbformat cell (an object with a `cell_type`), or `null` for
 * anything else or anything too large to keep.
 */
export function cellJson(value: unknown): Record<string, unknown> | null {
  if (!isRecord(value) || typeof value.cell_type !== 'string') {
    return null;
  }
  let size: number;
  try {
    size = JSON.stringify(value).length;
  } catch {
    return null;
  }
  return size <= Limits.CELL_JSON_CHARS ? value : null;
}

function parsePythonEvent(raw: Record<string, unknown>): PythonEvent | null {
  const callId = name(raw.callId);
  if (!callId) {
    return null;
  }
  const base: IPythonEventBase = {
    kind: 'python',
    callId,
    time: timestamp(raw.__timestamp__),
    session: name(raw.session),
    path: null
  };
  switch (raw.event) {
    case 'started':
      return {
        ...base,
        event: 'started',
        cells: cellSpecs(raw.cells),
        agent: nullable(text(raw.agent, Limits.TEXT_CHARS), terminalText)
      };
    case 'cell': {
      const cellIndex = index(raw.cellIndex, Limits.MAX_CELLS - 1);
      const status = cellStatus(raw.status);
      if (cellIndex === null || status === null) {
        return null;
      }
      return { ...base, event: 'cell', cellIndex, status };
    }
    case 'chunk': {
      const cellIndex = index(raw.cellIndex, Limits.MAX_CELLS - 1);
      if (cellIndex === null || typeof raw.text !== 'string') {
        return null;
      }
      const tail = terminalText(raw.text.slice(-Limits.TAIL_CHARS));
      return { ...base, event: 'chunk', cellIndex, text: tail };
    }
    case 'display': {
      const display = pythonDisplay(raw.display);
      if (display === null) {
        return null;
      }
      const cellIndex = index(raw.cellIndex, Limits.MAX_CELLS - 1);
      return { ...base, event: 'display', cellIndex, display };
    }
    case 'input': {
      const input = inputState(raw.input);
      if (input === null) {
        return null;
      }
      const cellIndex = index(raw.cellIndex, Limits.MAX_CELLS - 1);
      return { ...base, event: 'input', cellIndex, input };
    }
    case 'finished': {
      return { ...base, event: 'finished', result: callResult(raw.result) };
    }
    default:
      return null;
  }
}

function cellSpecs(raw: unknown): IPythonCellSpec[] {
  if (!Array.isArray(raw)) {
    return [];
  }
  const specs: IPythonCellSpec[] = [];
  raw.slice(0, Limits.MAX_CELLS).forEach((item, position) => {
    if (!isRecord(item)) {
      return;
    }
    specs.push({
      index: index(item.index, Limits.MAX_CELLS - 1) ?? position,
      title: name(item.title) ?? '',
      code: text(item.code, Limits.SOURCE_CHARS) ?? ''
    });
  });
  return specs;
}

/**
 * The image types shown inline; others are described, never rendered.
 */
const IMAGE_TYPES = new Set([
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp'
]);

const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;

function pythonDisplay(raw: unknown): PythonDisplay | null {
  if (!isRecord(raw)) {
    return null;
  }
  switch (raw.kind) {
    case 'image': {
      const mimeType = name(raw.mimeType) ?? 'image/unknown';
      let data: string | null = null;
      if (
        IMAGE_TYPES.has(mimeType) &&
        typeof raw.data === 'string' &&
        raw.data.length > 0 &&
        raw.data.length <= Limits.IMAGE_CHARS &&
        BASE64.test(raw.data)
      ) {
        data = raw.data.replace(/\s+/g, '');
      }
      return {
        kind: 'image',
        mimeType,
        data,
        bytes: count(raw.bytes),
        width: count(raw.width),
        height: count(raw.height),
        artifactPath: name(raw.artifactPath)
      };
    }
    case 'json':
      return { kind: 'json', data: raw.data };
    case 'status':
      return { kind: 'status', data: raw.data };
    default:
      return null;
  }
}

const INPUT_STATES = new Set(['waiting', 'answered', 'timeout', 'ended']);

function inputState(raw: unknown): IPythonInputState | null {
  if (!isRecord(raw) || !INPUT_STATES.has(raw.state as string)) {
    return null;
  }
  const runId = name(raw.runId);
  const state = raw.state as IPythonInputState['state'];
  if (
    state === 'waiting' &&
    (runId === null || !/^[0-9a-f]{32}$/.test(runId))
  ) {
    return null; // nowhere to answer
  }
  return {
    state,
    runId,
    prompt: terminalText(text(raw.prompt, Limits.TEXT_CHARS) ?? ''),
    password: raw.password === true
  };
}

function callResult(raw: unknown): IPythonCallResult {
  const r = isRecord(raw) ? raw : {};
  const cells: IPythonCellOutcome[] = [];
  if (Array.isArray(r.cells)) {
    for (const item of r.cells.slice(0, Limits.MAX_CELLS)) {
      if (!isRecord(item)) {
        continue;
      }
      const cellIndex = index(item.index, Limits.MAX_CELLS - 1);
      if (cellIndex === null) {
        continue;
      }
      cells.push({
        index: cellIndex,
        status: cellStatus(item.status),
        durationMs: count(item.durationMs),
        exitCode: integer(item.exitCode)
      });
    }
  }
  return {
    text: terminalText(text(r.text, Limits.TEXT_CHARS) ?? ''),
    isError: r.isError === true,
    cancelled: r.cancelled === true,
    timedOut: r.timedOut === true,
    truncated: r.truncated === true,
    totalLines: count(r.totalLines),
    totalBytes: count(r.totalBytes),
    artifactId: name(r.artifactId),
    artifactPath: name(r.artifactPath),
    durationMs: count(r.durationMs),
    cells
  };
}

/* ---------------------------------------------------------------------------
 * Field validators: each returns null for a value of the wrong type.
 * ------------------------------------------------------------------------ */

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function name(value: unknown): string | null {
  return typeof value === 'string' ? value.slice(0, Limits.NAME_CHARS) : null;
}

function text(value: unknown, limit: number): string | null {
  return typeof value === 'string' ? value.slice(0, limit) : null;
}

function nullable<T, U>(value: T | null, f: (value: T) => U): U | null {
  return value === null ? null : f(value);
}

function integer(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value)
    ? value
    : null;
}

function index(value: unknown, max: number): number | null {
  const i = integer(value);
  return i !== null && i >= 0 && i <= max ? i : null;
}

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0
    ? value
    : null;
}

function cellStatus(value: unknown): CellStatus | null {
  return value === 'pending' ||
    value === 'running' ||
    value === 'complete' ||
    value === 'error' ||
    value === 'skipped'
    ? value
    : null;
}

function timestamp(value: unknown): number {
  if (typeof value === 'string') {
    const ms = Date.parse(value);
    if (Number.isFinite(ms)) {
      return ms;
    }
  }
  return Date.now();
}
