/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The activity model: the calls of agents, built from the server's events,
 * that every plugin reads (the panel lists them, the status item counts them,
 * the connect dialog names the last one) through `IAgentActivity`.
 */

import { ISignal, Signal } from '@lumino/signaling';

import {
  CellStatus,
  INotebookCallEvent,
  IPythonInputState,
  IPythonCallResult,
  IPythonCellSpec,
  parseEmission,
  PythonDisplay,
  PythonEvent,
  XcshEvent
} from './events';

/**
 * Which calls the panel lists.
 */
export type ActivityFilter = 'all' | 'notebook' | 'python';

/**
 * Where the review of a notebook change stands, as the panel shows it: the review's state
 * (`review/`), mirrored here.
 */
export type UndoStatus =
  /** To review: the panel offers Keep and Undo. */
  | { state: 'idle' }
  /** Being undone. */
  | { state: 'pending' }
  /** Kept by the person. */
  | { state: 'kept' }
  /** Undone, by the call `by` (null for an undo inside a room, or until its id is known). */
  | { state: 'done'; by: string | null }
  /** Refused because the notebook changed since: nothing was changed. */
  | { state: 'refused'; message: string; detail: string | null }
  /** Failed for another reason (the server, the network). */
  | { state: 'failed'; message: string };

/**
 * A notebook tool call, as the panel shows it.
 */
export interface INotebookCall {
  readonly kind: 'notebook';
  readonly id: string;
  /** When the call was first seen (ms since the epoch). */
  readonly time: number;
  /** Bumped on every change, so views can tell what to re-render. */
  version: number;
  event: INotebookCallEvent;
  /** Where this call's review stands (kept, undone, being undone). */
  undo: UndoStatus;
  /**
   * The agent call this one undid, when it was the person's undo (`''` for one made before a
   * reload: the history says it was the person's, not which call it undid).
   */
  undoOf: string | null;
}

/**
 * The state of a python call as a whole.
 */
export type PythonCallStatus =
  'running' | 'ok' | 'error' | 'cancelled' | 'timedOut';

/**
 * One cell of a python call.
 */
export interface IPythonCellState {
  readonly index: number;
  title: string;
  code: string;
  status: CellStatus;
  /** The latest output tail. */
  output: string;
  /** Images and JSON values, in the order displayed (bounded). */
  displays: PythonDisplay[];
  /** Data of the status events, oldest first (bounded). */
  statusEvents: unknown[];
  /** How many status events arrived in total. */
  statusEventCount: number;
  durationMs: number | null;
  exitCode: number | null;
}

/**
 * A python tool call, as the panel shows it.
 */
export interface IPythonCall {
  readonly kind: 'python';
  readonly id: string;
  readonly time: number;
  version: number;
  session: string | null;
  /**
   * The notebook of a run in place; null for a python tool call.
   */
  path: string | null;
  status: PythonCallStatus;
  /** Whether the started event was seen (else cells are placeholders). */
  started: boolean;
  /** The agent that made the call (from its started event); null when unnamed. */
  agent: string | null;
  cells: IPythonCellState[];
  /** Displays not attached to a cell. */
  displays: PythonDisplay[];
  result: IPythonCallResult | null;
  /** An interrupt request is on its way. */
  interrupting: boolean;
  /** Why the last interrupt request failed. */
  interruptError: string | null;
  /** The prompt the kernel waits on (stdin `ask`), or how the last one ended. */
  input: IPythonInputState | null;
  /** An answer is on its way. */
  answering: boolean;
  /** Why the last answer failed. */
  answerError: string | null;
}

/**
 * Any call in the activity list.
 */
export type ActivityCall = INotebookCall | IPythonCall;

/**
 * What changed in an activity model.
 */
export type ActivityChange =
  | {
      type: 'added';
      id: string;
      /** Loaded from the server's history, not new activity. */
      restored?: boolean;
    }
  | { type: 'updated'; id: string }
  | { type: 'removed'; id: string };

/**
 * The calls of agents, newest first, fed by the server's events.
 */
export class ActivityModel {
  /**
   * Create a model.
   *
   * @param options - The bounds of the model.
   */
  constructor(options: ActivityModel.IOptions = {}) {
    this._maxCalls = options.maxCalls ?? ActivityModel.MAX_CALLS;
  }

  /**
   * The most calls kept; the oldest finished ones go first. Lowering it
   * drops the oldest finished calls over the new bound at once.
   */
  get maxCalls(): number {
    return this._maxCalls;
  }
  set maxCalls(value: number) {
    this._maxCalls = Math.max(1, Math.floor(value));
    this._prune();
  }

  /**
   * Emitted once per change of the list or of a call.
   */
  get changed(): ISignal<this, ActivityChange> {
    return this._changed;
  }

  /**
   * The calls, newest first.
   */
  get calls(): readonly ActivityCall[] {
    return this._calls;
  }

  /**
   * How many calls are running now.
   */
  get runningCount(): number {
    return this._calls.filter(isRunning).length;
  }

  /**
   * The call with this id, if any.
   */
  get(id: string): ActivityCall | undefined {
    return this._calls.find(call => call.id === id);
  }

  /**
   * Take one raw emission of the event bus; others' emissions are ignored.
   *
   * Never throws: an emission that cannot be applied is dropped.
   *
   * @returns Whether the emission changed the model.
   */
  handleEmission(emission: unknown): boolean {
    try {
      const event = parseEmission(emission);
      return event !== null && this.apply(event);
    } catch (error) {
      console.warn('jupyter-xcsh: ignored an activity event', error);
      return false;
    }
  }

  /**
   * Apply a parsed event.
   *
   * @returns Whether the model changed.
   */
  apply(event: XcshEvent): boolean {
    if (event.kind === 'notebook') {
      return this._applyNotebook(event);
    }
    return this._applyPython(event);
  }

  /**
   * Add the calls of the server's activity history (`GET /api/xcsh/activity`
   * entries, each with the events of one call) that the model does not
   * have yet, each in its place by time; a call already here (it arrived
   * live) is kept as it is, never doubled.
   *
   * Never throws: a malformed entry or event is dropped.
   *
   * @returns How many calls were added.
   */
  loadHistory(entries: readonly unknown[]): number {
    const scratch = new ActivityModel({ maxCalls: Number.MAX_SAFE_INTEGER });
    for (const entry of entries) {
      if (typeof entry !== 'object' || entry === null) {
        continue;
      }
      const { callId, events } = entry as Record<string, unknown>;
      if (
        typeof callId !== 'string' ||
        this.get(callId) !== undefined ||
        !Array.isArray(events)
      ) {
        continue;
      }
      for (const emission of events) {
        // Only the entry's own call: an entry cannot change another one.
        if (
          typeof emission === 'object' &&
          emission !== null &&
          (emission as Record<string, unknown>).callId === callId
        ) {
          scratch.handleEmission(emission);
        }
      }
    }
    let added = 0;
    // Oldest first, so that calls of the same time keep the server's order.
    for (const call of [...scratch.calls].reverse()) {
      if (this.get(call.id) !== undefined) {
        continue;
      }
      const undoOf = this._undoOf.get(call.id);
      if (call.kind === 'notebook' && undoOf !== undefined) {
        call.undoOf = undoOf;
      }
      let at = this._calls.findIndex(other => other.time <= call.time);
      if (at < 0) {
        at = this._calls.length;
      }
      this._calls.splice(at, 0, call);
      this._changed.emit({ type: 'added', id: call.id, restored: true });
      added++;
    }
    this._prune();
    return added;
  }

  /**
   * Remove every call except python calls still running (their interrupt
   * button must stay reachable).
   */
  clear(): void {
    const removed = this._calls.filter(call => !isRunning(call));
    this._calls = this._calls.filter(isRunning);
    for (const call of removed) {
      this._changed.emit({ type: 'removed', id: call.id });
    }
  }

  /**
   * Record that an interrupt of a running call was requested or failed.
   *
   * @param id - The python call.
   * @param pending - Whether a request is on its way.
   * @param error - Why the request failed, if it did.
   */
  setInterrupting(id: string, pending: boolean, error: string | null): void {
    const call = this.get(id);
    if (call?.kind !== 'python') {
      return;
    }
    call.interrupting = pending;
    call.interruptError = error;
    this._touch(call);
  }

  /**
   * Record that an answer to a call's prompt was sent or failed.
   *
   * @param id - The python call.
   * @param pending - Whether the answer is on its way.
   * @param error - Why it failed, if it did.
   */
  setAnswering(id: string, pending: boolean, error: string | null): void {
    const call = this.get(id);
    if (call?.kind !== 'python') {
      return;
    }
    call.answering = pending;
    call.answerError = error;
    this._touch(call);
  }

  /**
   * Record where the review of a notebook call stands.
   *
   * @param id - The notebook call.
   * @param status - Its new status.
   */
  setUndo(id: string, status: UndoStatus): void {
    const call = this.get(id);
    if (call?.kind !== 'notebook') {
      return;
    }
    call.undo = status;
    this._touch(call);
  }

  /**
   * Record that the call `undoId` (the person's) undid the call `originalId` (its event
   * may have arrived already, or may come later).
   */
  linkUndo(undoId: string, originalId: string): void {
    this._undoOf.set(undoId, originalId);
    if (this._undoOf.size > this.maxCalls) {
      const oldest = this._undoOf.keys().next().value;
      if (oldest !== undefined) {
        this._undoOf.delete(oldest);
      }
    }
    const call = this.get(undoId);
    if (call?.kind === 'notebook' && call.undoOf !== originalId) {
      call.undoOf = originalId;
      this._touch(call);
    }
  }

  private _applyNotebook(event: INotebookCallEvent): boolean {
    const existing = this.get(event.callId);
    if (existing !== undefined) {
      if (existing.kind !== 'notebook') {
        return false;
      }
      existing.event = event;
      this._touch(existing);
      return true;
    }
    this._add({
      kind: 'notebook',
      id: event.callId,
      time: event.time,
      version: 0,
      event,
      undo: { state: 'idle' },
      undoOf: this._undoOf.get(event.callId) ?? null
    });
    return true;
  }

  private _applyPython(event: PythonEvent): boolean {
    let call = this.get(event.callId);
    if (call !== undefined && call.kind !== 'python') {
      return false;
    }
    const isNew = call === undefined;
    if (call === undefined) {
      call = newPythonCall(event.callId, event.time);
    }
    if (!applyPythonEvent(call, event)) {
      return false;
    }
    if (event.session !== null) {
      call.session = event.session;
    }
    if (event.path !== null) {
      call.path = event.path;
    }
    if (isNew) {
      this._add(call);
    } else {
      this._touch(call);
    }
    return true;
  }

  private _add(call: ActivityCall): void {
    this._calls.unshift(call);
    this._changed.emit({ type: 'added', id: call.id });
    this._prune();
  }

  /**
   * Over the bound, drop the oldest finished calls (running ones are live).
   */
  private _prune(): void {
    for (let i = this._calls.length - 1; i >= 0; i--) {
      if (this._calls.length <= this.maxCalls) {
        break;
      }
      const old = this._calls[i];
      if (!isRunning(old)) {
        this._calls.splice(i, 1);
        this._changed.emit({ type: 'removed', id: old.id });
      }
    }
  }

  private _touch(call: ActivityCall): void {
    call.version++;
    this._changed.emit({ type: 'updated', id: call.id });
  }

  private _maxCalls: number;
  private _calls: ActivityCall[] = [];
  private _changed = new Signal<this, ActivityChange>(this);
  /** Revert call id → the call it reverted (bounded like the list). */
  private _undoOf = new Map<string, string>();
}

/**
 * The namespace for {@link ActivityModel} statics.
 */
export namespace ActivityModel {
  /**
   * The options of a model.
   */
  export interface IOptions {
    /**
     * The most calls kept (default {@link MAX_CALLS}).
     */
    maxCalls?: number;
  }

  /**
   * The default bound of the call list.
   */
  export const MAX_CALLS = 200;

  /**
   * The most images and JSON values kept per cell (the latest win).
   */
  export const MAX_DISPLAYS = 20;

  /**
   * The most status events kept per cell (the latest win).
   */
  export const MAX_STATUS_EVENTS = 100;
}

/**
 * Whether a call can still change: a python call without its result.
 */
export function isRunning(call: ActivityCall): boolean {
  return call.kind === 'python' && call.status === 'running';
}

function newPythonCall(id: string, time: number): IPythonCall {
  return {
    kind: 'python',
    id,
    time,
    version: 0,
    session: null,
    path: null,
    status: 'running',
    started: false,
    agent: null,
    cells: [],
    displays: [],
    result: null,
    interrupting: false,
    interruptError: null,
    input: null,
    answering: false,
    answerError: null
  };
}

function newCell(spec: IPythonCellSpec): IPythonCellState {
  return {
    index: spec.index,
    title: spec.title,
    code: spec.code,
    status: 'pending',
    output: '',
    displays: [],
    statusEvents: [],
    statusEventCount: 0,
    durationMs: null,
    exitCode: null
  };
}

/**
 * The cell at `index`, created when the call's started event was missed (no
 * placeholders for the cells before it: a stray index cannot flood the list).
 */
function cellAt(call: IPythonCall, index: number): IPythonCellState {
  let position = call.cells.findIndex(cell => cell.index >= index);
  if (position === -1) {
    position = call.cells.length;
  } else if (call.cells[position].index === index) {
    return call.cells[position];
  }
  const cell = newCell({ index, title: '', code: '' });
  call.cells.splice(position, 0, cell);
  return cell;
}

/**
 * Apply a python event to its call.
 *
 * @returns Whether the call changed. Once a call has its result, progress
 *   events that arrive late are ignored: the result is authoritative.
 */
function applyPythonEvent(call: IPythonCall, event: PythonEvent): boolean {
  const finished = call.result !== null;
  switch (event.event) {
    case 'started': {
      if (call.started || finished) {
        return false;
      }
      call.started = true;
      call.agent = event.agent;
      // Cells are numbered by position; events that arrived before (out of
      // order) keep their cells' state.
      const known = call.cells;
      call.cells = event.cells.map((spec, index) => {
        const cell =
          known.find(c => c.index === index) ?? newCell({ ...spec, index });
        cell.title = spec.title;
        cell.code = spec.code;
        return cell;
      });
      return true;
    }
    case 'cell': {
      if (finished) {
        return false;
      }
      const cell = cellAt(call, event.cellIndex);
      if (cell.status === event.status) {
        return false;
      }
      cell.status = event.status;
      return true;
    }
    case 'chunk': {
      if (finished) {
        return false;
      }
      const cell = cellAt(call, event.cellIndex);
      cell.output = event.text;
      if (cell.status === 'pending') {
        cell.status = 'running';
      }
      return true;
    }
    case 'display': {
      if (finished) {
        return false;
      }
      const cell =
        event.cellIndex === null ? null : cellAt(call, event.cellIndex);
      if (event.display.kind === 'status') {
        if (cell === null) {
          return false;
        }
        cell.statusEventCount++;
        pushBounded(
          cell.statusEvents,
          event.display.data,
          ActivityModel.MAX_STATUS_EVENTS
        );
      } else {
        pushBounded(
          cell?.displays ?? call.displays,
          event.display,
          ActivityModel.MAX_DISPLAYS
        );
      }
      return true;
    }
    case 'input': {
      if (finished) {
        return false;
      }
      call.input = event.input;
      if (event.input.state !== 'waiting') {
        call.answering = false;
      }
      return true;
    }
    case 'finished': {
      if (finished) {
        return false;
      }
      const result = event.result;
      call.result = result;
      call.interrupting = false;
      call.answering = false;
      if (call.input?.state === 'waiting') {
        call.input = { ...call.input, state: 'ended' };
      }
      call.status = result.timedOut
        ? 'timedOut'
        : result.cancelled
          ? 'cancelled'
          : result.isError
            ? 'error'
            : 'ok';
      for (const outcome of result.cells) {
        const cell = cellAt(call, outcome.index);
        if (outcome.status !== null) {
          cell.status = outcome.status;
        }
        cell.durationMs = outcome.durationMs;
        cell.exitCode = outcome.exitCode;
      }
      // A cell the result does not cover cannot still be running.
      for (const cell of call.cells) {
        if (cell.status === 'running') {
          cell.status = call.status === 'ok' ? 'complete' : 'error';
        }
      }
      return true;
    }
  }
}

function pushBounded<T>(list: T[], item: T, max: number): void {
  list.push(item);
  if (list.length > max) {
    list.splice(0, list.length - max);
  }
}
