/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The marks of cells agents changed, kept per notebook (no DOM here).
 *
 * A mark names the source the agent left in its cell. It shows once the open notebook holds
 * that source (the agent's change has arrived there), and goes as soon as the cell holds
 * anything else: a person edited it. Views report what each marked cell holds through
 * {@link CellMarks.observe}; anything that changes cells (notebook tool calls today, runs in
 * place later) adds marks through {@link CellMarks.add}.
 */

import type { TranslationBundle } from '@jupyterlab/translation';
import { ISignal, Signal } from '@lumino/signaling';

import { Limits, parseEmission, type INotebookCallEvent } from '../core/events';
import type { ICellMark, ICellMarks } from '../tokens';
import { UNTRANSLATED } from '../translation';

/**
 * What a view should do with a mark, given what its cell holds now.
 */
export type MarkState =
  /** The cell holds what the agent left: show the mark. */
  | 'shown'
  /** The agent's change has not reached the open notebook yet. */
  | 'pending'
  /** A person changed the cell since: the mark is gone. */
  | 'edited';

/**
 * A mark and what its view has learnt about it.
 */
interface IEntry {
  mark: ICellMark;
  /** The source the mark stands for (the mark's, or the cell's when first seen). */
  source: string | null;
  /** Whether the cell was seen holding that source. */
  confirmed: boolean;
  /** Restored from the server's history: a cell not holding its source ends it. */
  restored?: boolean;
}

/**
 * The marks of agent-changed cells in every notebook, newest last.
 */
export class CellMarks implements ICellMarks {
  /**
   * Create an empty set of marks.
   *
   * @param options - The bounds of the set.
   */
  constructor(options: CellMarks.IOptions = {}) {
    this.maxPerNotebook = options.maxPerNotebook ?? CellMarks.MAX_PER_NOTEBOOK;
  }

  /**
   * The most marks kept per notebook; the oldest go first.
   */
  readonly maxPerNotebook: number;

  get changed(): ISignal<this, string> {
    return this._changed;
  }

  /**
   * The marks of a notebook, oldest first.
   */
  marksOf(path: string): ICellMark[] {
    return [...(this._byPath.get(path)?.values() ?? [])].map(e => e.mark);
  }

  add(mark: ICellMark): void {
    if (this._ignored.has(mark.callId)) {
      return;
    }
    let marks = this._byPath.get(mark.path);
    if (marks === undefined) {
      marks = new Map();
      this._byPath.set(mark.path, marks);
    }
    const key = keyOf(mark);
    marks.delete(key); // re-added last: the newest mark of the cell wins
    marks.set(key, { mark, source: mark.source, confirmed: false });
    while (marks.size > this.maxPerNotebook) {
      const oldest = marks.keys().next().value;
      if (oldest === undefined) {
        break;
      }
      marks.delete(oldest);
    }
    this._changed.emit(mark.path);
  }

  /**
   * Take one raw emission of the event bus: a finished notebook change marks
   * the cell it left (a delete leaves none); a batch, every cell it left.
   */
  handleEmission(emission: unknown): void {
    const event = parseEmission(emission);
    if (event?.kind === 'notebook') {
      for (const mark of marksForNotebookCall(event)) {
        this.add(mark);
      }
    }
  }

  /**
   * Take one event of the server's activity history (a call made before this
   * page was loaded): its marks come back for cells that still exist, by id,
   * where no mark of this page is, and only while the cell holds what the
   * agent left (a person's edit since ends the mark at once).
   */
  restore(emission: unknown): void {
    const event = parseEmission(emission);
    if (event?.kind !== 'notebook' || this._ignored.has(event.callId)) {
      return;
    }
    for (const mark of marksForNotebookCall(event)) {
      const key = keyOf(mark);
      const existing = this._byPath.get(mark.path)?.get(key);
      if (mark.cellId === null || (existing && !existing.restored)) {
        continue; // by index another cell may hold it now; or a newer mark
      }
      this.add(mark);
      const entry = this._byPath.get(mark.path)?.get(key);
      if (entry !== undefined) {
        entry.restored = true;
      }
    }
  }

  /**
   * Tell the marks what the cell of `mark` holds now.
   *
   * @param mark - A mark of {@link marksOf}.
   * @param source - The cell's source in the open notebook.
   * @returns What to show. An `edited` mark is removed by this call.
   */
  observe(mark: ICellMark, source: string): MarkState {
    const marks = this._byPath.get(mark.path);
    const key = keyOf(mark);
    const entry = marks?.get(key);
    if (marks === undefined || entry === undefined || entry.mark !== mark) {
      return 'edited';
    }
    if (entry.source === null) {
      entry.source = source; // a run: the source it ran is the source it left
    }
    if (sameSource(source, entry.source)) {
      entry.confirmed = true;
      return 'shown';
    }
    if ((!entry.confirmed && !entry.restored) || mark.cellId === null) {
      // Not arrived yet; or, by index, another cell may hold that index now.
      return 'pending';
    }
    marks.delete(key);
    this._changed.emit(mark.path);
    return 'edited';
  }

  removeCall(callId: string): void {
    for (const [path, marks] of this._byPath) {
      let removed = false;
      for (const [key, entry] of marks) {
        if (entry.mark.callId === callId) {
          marks.delete(key);
          removed = true;
        }
      }
      if (removed) {
        this._changed.emit(path);
      }
    }
  }

  removeCell(path: string, cellId: string, callId: string): void {
    const marks = this._byPath.get(path);
    const key = `id:${cellId}`;
    if (marks?.get(key)?.mark.callId === callId) {
      marks.delete(key);
      this._changed.emit(path);
    }
  }

  ignoreCall(callId: string): void {
    this._ignored.add(callId);
    if (this._ignored.size > CellMarks.MAX_IGNORED) {
      const oldest = this._ignored.values().next().value;
      if (oldest !== undefined) {
        this._ignored.delete(oldest);
      }
    }
    this.removeCall(callId);
  }

  private _byPath = new Map<string, Map<string, IEntry>>();
  private _ignored = new Set<string>();
  private _changed = new Signal<this, string>(this);
}

/**
 * The namespace for {@link CellMarks} statics.
 */
export namespace CellMarks {
  /**
   * The options of a set of marks.
   */
  export interface IOptions {
    /** The most marks kept per notebook (default {@link MAX_PER_NOTEBOOK}). */
    maxPerNotebook?: number;
  }

  /** The default bound of marks per notebook. */
  export const MAX_PER_NOTEBOOK = 500;

  /** How many ignored call ids are remembered. */
  export const MAX_IGNORED = 1000;
}

/**
 * The mark a finished notebook tool call leaves, or `null` (a failed call, a
 * read, a delete, a move that did not move).
 */
export function markForNotebookCall(
  event: INotebookCallEvent
): ICellMark | null {
  if (event.status !== 'ok' || event.cellIndex === null) {
    return null;
  }
  if (!['edit', 'insert', 'move'].includes(event.action)) {
    return null;
  }
  if (event.action === 'move' && event.fromIndex === event.cellIndex) {
    return null;
  }
  if (event.source === null) {
    return null;
  }
  return {
    path: event.path,
    cellId: event.cellId,
    cellIndex: event.cellIndex,
    action: event.restored ? 'restore' : event.action,
    callId: event.callId,
    time: event.time,
    source: event.source
  };
}

/**
 * The marks a finished notebook tool call leaves: its cell's, or for a batch
 * the cells its changes left (each cell's last change; none for a cell a
 * later change deleted).
 */
export function marksForNotebookCall(event: INotebookCallEvent): ICellMark[] {
  if (event.changes === null) {
    const mark = markForNotebookCall(event);
    return mark === null ? [] : [mark];
  }
  if (event.status !== 'ok') {
    return [];
  }
  const byCell = new Map<string, ICellMark>();
  for (const change of event.changes) {
    if (change.action === 'delete') {
      // The deleted cell's id: kept in the cell as it was, or in the change
      // when that cell went to an artifact.
      const kept = change.previousCell?.id;
      const id = typeof kept === 'string' ? kept : change.cellId;
      byCell.delete(id !== null ? `id:${id}` : `#${change.cellIndex}`);
      continue;
    }
    const mark = markForNotebookCall({
      ...event,
      ...change,
      changes: null
    });
    if (mark !== null) {
      const key = keyOf(mark);
      byCell.delete(key);
      byCell.set(key, mark);
    }
  }
  return [...byCell.values()];
}

/**
 * What a mark says on hover: which action, when, and which call.
 */
export function markTitle(
  mark: ICellMark,
  trans: TranslationBundle = UNTRANSLATED
): string {
  const time = new Date(mark.time).toLocaleTimeString();
  const call = mark.callId.slice(0, 8);
  switch (mark.action) {
    case 'edit':
      return trans.__('An agent edited this cell at %1 (call %2).', time, call);
    case 'insert':
      return trans.__(
        'An agent inserted this cell at %1 (call %2).',
        time,
        call
      );
    case 'move':
      return trans.__('An agent moved this cell at %1 (call %2).', time, call);
    case 'restore':
      return trans.__(
        'An agent restored this cell at %1 (call %2).',
        time,
        call
      );
    case 'run':
      return trans.__('An agent ran this cell at %1 (call %2).', time, call);
    default:
      return trans.__(
        'An agent changed this cell (%1) at %2 (call %3).',
        mark.action,
        time,
        call
      );
  }
}

function keyOf(mark: ICellMark): string {
  return mark.cellId !== null ? `id:${mark.cellId}` : `#${mark.cellIndex}`;
}

/**
 * Whether a cell holds the source a mark stands for; a source the server cut
 * (it sends at most 64 KiB) is compared in part.
 */
function sameSource(source: string, left: string): boolean {
  return left.length >= Limits.SOURCE_CHARS
    ? source.startsWith(left)
    : source === left;
}
