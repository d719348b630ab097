/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * What the person has still to review in each notebook: the changes agents made to its cells,
 * one per call and cell, each pending until the person keeps or undoes it (no DOM here).
 *
 * A change is built from its call's notebook event alone: the cell before (`previousCell` of
 * an edit or a delete, nothing for an insert), the source the call left (`source`), and where a
 * moved cell came from (`fromIndex`). A batch gives one change per cell it touched, from that
 * cell's first change (before) to its last (after); a cell a batch inserted then deleted gives
 * none.
 */

import { ISignal, Signal } from '@lumino/signaling';

import {
  parseEmission,
  type INotebookCallEvent,
  type INotebookChangeEvent
} from '../core/events';

/**
 * Where a change is in its review.
 */
export type ReviewState = 'pending' | 'kept' | 'undone';

/**
 * What an agent call did to one cell.
 */
export type ReviewAction = 'edit' | 'insert' | 'delete' | 'move';

/**
 * One agent call's change to one cell, to review.
 */
/**
 * How many cells `changes` touch: a cell an agent inserted then edited is one cell to review,
 * however many calls changed it (cells by id, or by index in notebooks without ids).
 */
export function changedCells(changes: readonly IReviewChange[]): number {
  return new Set(
    changes.map(c =>
      c.cellId !== null ? `id:${c.cellId}` : `index:${c.cellIndex}`
    )
  ).size;
}

export interface IReviewChange {
  /** Unique: the call and the cell. */
  readonly key: string;
  /** The notebook's path. */
  readonly path: string;
  /** The call that made the change. */
  readonly callId: string;
  /** When (ms since the epoch). */
  readonly time: number;
  /** The cell's id (the deleted cell's for a delete); `null` in notebooks without ids. */
  readonly cellId: string | null;
  /** The cell's index after the call (a deleted cell's old index). */
  readonly cellIndex: number;
  /** What the call did to the cell, overall. */
  readonly action: ReviewAction;
  /** The index the cell came from, when the call moved it; else `null`. */
  readonly fromIndex: number | null;
  /** The source before the call (`''` for an insert; `null` when not in the event). */
  readonly before: string | null;
  /** The source the call left (`null` for a delete). */
  readonly after: string | null;
  /** The cell's outputs before the call (edit, delete), when the event kept them. */
  readonly outputsBefore: readonly unknown[] | null;
  /**
   * The call's event, reduced to this cell's changes for a batch: what an undo of this one
   * change reverts.
   */
  readonly event: INotebookCallEvent;
  /** Its review state. */
  state: ReviewState;
}

/**
 * A review state the server kept (`review` of an activity history entry).
 */
export interface IStoredReview {
  /** The cell it applies to; `null` for the whole call. */
  cellId: string | null;
  /** `yours`: the call was the person's own undo (not an agent's change). */
  state: 'kept' | 'undone' | 'yours';
}

/**
 * The changes to review, per notebook.
 */
export class ReviewModel {
  /**
   * Emitted with a notebook's path when its changes or their states change.
   */
  get changed(): ISignal<this, string> {
    return this._changed;
  }

  /**
   * Take one raw emission of the event bus (a finished notebook call adds its changes).
   */
  handleEmission(emission: unknown): void {
    const event = parseEmission(emission);
    if (event?.kind === 'notebook') {
      this.addCall(event);
    }
  }

  /**
   * Add the changes of a finished notebook call (pending); a call seen before is left as it is.
   */
  addCall(event: INotebookCallEvent): void {
    if (this._ignored.has(event.callId) || this._calls.has(event.callId)) {
      return;
    }
    const changes = changesOfCall(event);
    if (changes.length === 0) {
      return;
    }
    this._calls.add(event.callId);
    this._events.set(event.callId, event);
    for (const change of changes) {
      this._changes.set(change.key, change);
      this._order.set(change.key, ++this._count);
    }
    while (this._changes.size > ReviewModel.MAX_CHANGES) {
      const oldest = this._changes.keys().next().value;
      if (oldest === undefined) {
        break;
      }
      const dropped = this._changes.get(oldest);
      this._changes.delete(oldest);
      this._order.delete(oldest);
      if (dropped && this.allOfCall(dropped.callId).length === 0) {
        this._events.delete(dropped.callId);
      }
    }
    this._changed.emit(event.path);
  }

  /**
   * Add a call the server's activity history kept, with the review states kept for it.
   */
  restore(
    emissions: readonly unknown[],
    review: readonly IStoredReview[]
  ): void {
    for (const emission of emissions) {
      const event = parseEmission(emission);
      if (event?.kind !== 'notebook') {
        continue;
      }
      if (review.some(stored => stored.state === 'yours')) {
        this.ignoreCall(event.callId);
        continue;
      }
      this.addCall(event);
      for (const stored of review) {
        if (stored.state !== 'yours') {
          this._apply(event.callId, stored.cellId, stored.state);
        }
      }
      this._changed.emit(event.path);
    }
  }

  /**
   * Every change of a notebook, oldest first.
   */
  changesOf(path: string): IReviewChange[] {
    return [...this._changes.values()].filter(c => c.path === path);
  }

  /**
   * The pending changes of a notebook, oldest first.
   */
  pendingOf(path: string): IReviewChange[] {
    return this.changesOf(path).filter(c => c.state === 'pending');
  }

  /**
   * The newest pending change of a cell (by id, or by index in notebooks without ids).
   */
  pendingOfCell(
    path: string,
    cellId: string | null,
    cellIndex: number | null = null
  ): IReviewChange | null {
    const pending = this.pendingOf(path).filter(c =>
      cellId !== null ? c.cellId === cellId : c.cellIndex === cellIndex
    );
    return pending[pending.length - 1] ?? null;
  }

  /**
   * The pending changes of one call.
   */
  pendingOfCall(callId: string): IReviewChange[] {
    return [...this._changes.values()].filter(
      c => c.callId === callId && c.state === 'pending'
    );
  }

  /**
   * Every change of one call, whatever its state.
   */
  allOfCall(callId: string): IReviewChange[] {
    return [...this._changes.values()].filter(c => c.callId === callId);
  }

  /**
   * The whole event of a call whose changes are in the model.
   */
  callEvent(callId: string): INotebookCallEvent | null {
    return this._events.get(callId) ?? null;
  }

  /**
   * The calls of the person's current turn on a notebook: those with pending changes made
   * since the person last kept all there, newest first.
   */
  turnOf(path: string): string[] {
    const since = this._turnStart.get(path) ?? 0;
    const calls: string[] = [];
    for (const change of this.pendingOf(path)) {
      const order = this._order.get(change.key) ?? 0;
      if (order > since && !calls.includes(change.callId)) {
        calls.push(change.callId);
      }
    }
    return calls.reverse();
  }

  /**
   * Set the state of a call's changes (of one cell of it when `cellId` is given).
   *
   * @returns The changes whose state changed.
   */
  setState(
    callId: string,
    cellId: string | null,
    state: 'kept' | 'undone'
  ): IReviewChange[] {
    const set = this._apply(callId, cellId, state);
    if (set.length > 0) {
      this._changed.emit(set[0].path);
    }
    return set;
  }

  /**
   * Start a new turn on a notebook (the person kept all): later calls form it.
   */
  startTurn(path: string): void {
    this._turnStart.set(path, this._count);
  }

  /**
   * Never add changes for a call (a person's undo is not an agent's change), and drop any.
   */
  ignoreCall(callId: string): void {
    this._ignored.add(callId);
    if (this._ignored.size > ReviewModel.MAX_IGNORED) {
      const oldest = this._ignored.values().next().value;
      if (oldest !== undefined) {
        this._ignored.delete(oldest);
      }
    }
    const paths = new Set<string>();
    for (const [key, change] of this._changes) {
      if (change.callId === callId) {
        this._changes.delete(key);
        this._order.delete(key);
        paths.add(change.path);
      }
    }
    this._events.delete(callId);
    paths.forEach(path => this._changed.emit(path));
  }

  private _apply(
    callId: string,
    cellId: string | null,
    state: 'kept' | 'undone'
  ): IReviewChange[] {
    const set: IReviewChange[] = [];
    for (const change of this._changes.values()) {
      if (
        change.callId === callId &&
        (cellId === null || change.cellId === cellId) &&
        change.state === 'pending'
      ) {
        change.state = state;
        set.push(change);
      }
    }
    return set;
  }

  private _changes = new Map<string, IReviewChange>();
  private _calls = new Set<string>();
  private _events = new Map<string, INotebookCallEvent>();
  private _ignored = new Set<string>();
  /** When each change was added (a count), and where each notebook's turn starts. */
  private _order = new Map<string, number>();
  private _count = 0;
  private _turnStart = new Map<string, number>();
  private _changed = new Signal<this, string>(this);
}

/**
 * The namespace for {@link ReviewModel} statics.
 */
export namespace ReviewModel {
  /** The most changes kept (the oldest go first). */
  export const MAX_CHANGES = 2000;
  /** How many ignored call ids are remembered. */
  export const MAX_IGNORED = 1000;
}

type Change = INotebookCallEvent | INotebookChangeEvent;

const ACTIONS = new Set(['edit', 'insert', 'delete', 'move']);

/**
 * The id of the cell a change addressed (a delete's: the deleted cell's).
 */
function cellIdOf(change: Change): string | null {
  if (change.action === 'delete') {
    const kept = change.previousCell?.id;
    return typeof kept === 'string' ? kept : change.cellId;
  }
  return change.cellId;
}

/**
 * The source of an nbformat cell (a string or a list of lines), or `null`.
 */
export function cellSource(cell: unknown): string | null {
  if (typeof cell !== 'object' || cell === null) {
    return null;
  }
  const source = (cell as Record<string, unknown>).source;
  if (typeof source === 'string') {
    return source;
  }
  if (Array.isArray(source) && source.every(s => typeof s === 'string')) {
    return source.join('');
  }
  return null;
}

function outputsOf(cell: unknown): unknown[] | null {
  if (typeof cell !== 'object' || cell === null) {
    return null;
  }
  const outputs = (cell as Record<string, unknown>).outputs;
  return Array.isArray(outputs) ? outputs : null;
}

/**
 * The changes a finished notebook call made, one per cell (none for a failed call, a read, or
 * a move that left its cell where it was).
 */
export function changesOfCall(event: INotebookCallEvent): IReviewChange[] {
  if (event.status !== 'ok') {
    return [];
  }
  const groups = new Map<string, { indexes: number[]; changes: Change[] }>();
  const steps: Change[] = event.changes ?? [event];
  steps.forEach((step, k) => {
    if (!ACTIONS.has(step.action) || step.cellIndex === null) {
      return;
    }
    if (step.action === 'move' && step.fromIndex === step.cellIndex) {
      return;
    }
    const id = cellIdOf(step);
    const key = id !== null ? `id:${id}` : `#${step.cellIndex}`;
    const group = groups.get(key) ?? { indexes: [], changes: [] };
    group.indexes.push(k);
    group.changes.push(step);
    groups.set(key, group);
  });
  const result: IReviewChange[] = [];
  for (const [key, group] of groups) {
    const first = group.changes[0];
    const last = group.changes[group.changes.length - 1];
    const inserted = first.action === 'insert';
    const deleted = last.action === 'delete';
    if (inserted && deleted) {
      continue; // a cell the call added then removed: nothing to review
    }
    const edited = group.changes.some(c => c.action === 'edit');
    const action: ReviewAction = deleted
      ? 'delete'
      : inserted
        ? 'insert'
        : edited
          ? 'edit'
          : 'move';
    const move = group.changes.find(c => c.action === 'move');
    const before = inserted
      ? ''
      : first.action === 'move'
        ? first.source
        : (cellSource(first.previousCell) ??
          (first.action === 'delete' ? first.source : null));
    const reduced: INotebookCallEvent =
      event.changes === null
        ? event
        : {
            ...event,
            changes: event.changes.filter((_, k) => group.indexes.includes(k))
          };
    result.push({
      key: `${event.callId}/${key}`,
      path: event.path,
      callId: event.callId,
      time: event.time,
      cellId: cellIdOf(last),
      cellIndex: last.cellIndex ?? 0,
      action,
      fromIndex: !inserted && move ? move.fromIndex : null,
      before: before ?? null,
      after: deleted ? null : last.source,
      outputsBefore: outputsOf(first.previousCell),
      event: reduced,
      state: 'pending'
    });
  }
  return result;
}
