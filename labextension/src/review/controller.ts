/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The review's actions: keep or undo a change, every change of a call, or of the person's turn
 * on a notebook. Each outcome is recorded in the review model, the cell marks, and the
 * server's activity history (so that it lasts across a reload and a server restart).
 */

import type { TranslationBundle } from '@jupyterlab/translation';
import { ISignal, Signal } from '@lumino/signaling';

import type { ICellMarks } from '../tokens';
import { UNTRANSLATED } from '../translation';
import type { IReviewChange, ReviewModel } from './model';
import type { IUndoer, UndoOutcome } from './undo';

/**
 * Stores a review state on the server (see `api.ts`).
 */
export type ReviewStore = (review: {
  path: string;
  call_ids: string[];
  cell_id: string | null;
  /** `yours`: the call was the person's own undo, never an agent's call. */
  state: 'kept' | 'undone' | 'yours';
}) => Promise<void>;

/**
 * What an action said to the person, per change.
 */
export interface IReviewMessage {
  /** The change it is about. */
  key: string;
  /** A refusal or a failure, to show next to the change. */
  message: string;
}

/**
 * Keeps and undoes reviewed changes.
 */
export class ReviewController {
  /**
   * Create the controller.
   */
  constructor(options: ReviewController.IOptions) {
    this.model = options.model;
    this._undoer = options.undoer;
    this._marks = options.marks ?? null;
    this._store = options.store ?? (() => Promise.resolve());
    this._trans = options.trans ?? UNTRANSLATED;
  }

  /** The changes reviewed. */
  readonly model: ReviewModel;

  /**
   * Emitted when an action was refused or failed (and when its message is cleared).
   */
  get messaged(): ISignal<this, IReviewMessage> {
    return this._messaged;
  }

  /**
   * What the last action on a change said, or `null`.
   */
  messageOf(key: string): string | null {
    return this._messages.get(key) ?? null;
  }

  /**
   * Keep changes: the diffs, ghosts and marks go; nothing in the notebook changes.
   */
  async keep(changes: readonly IReviewChange[]): Promise<void> {
    for (const [callId, group] of byCall(changes)) {
      const whole =
        this.model.pendingOfCall(callId).length === group.length &&
        group.length > 0;
      const cells = whole ? [null] : group.map(c => c.cellId);
      for (const cellId of cells) {
        const set = this.model.setState(callId, cellId, 'kept');
        set.forEach(c => this._clear(c.key));
        if (set.length > 0) {
          this._dismissMarks(callId, cellId, set[0].path);
          await this._store({
            path: set[0].path,
            call_ids: [callId],
            cell_id: cellId,
            state: 'kept'
          });
        }
      }
    }
  }

  /**
   * Undo one change (one call's change to one cell).
   *
   * @returns How it went (a refusal is also shown next to the change).
   */
  async undo(change: IReviewChange): Promise<UndoOutcome> {
    const whole = this.model.allOfCall(change.callId).length === 1;
    return this._undo(change, whole ? null : change.cellId);
  }

  /**
   * Undo every pending change of a call (its cells as one undo).
   */
  async undoCall(callId: string): Promise<UndoOutcome> {
    const pending = this.model.pendingOfCall(callId);
    if (pending.length === 0) {
      return { state: 'done', by: null };
    }
    if (pending.length === this.model.allOfCall(callId).length) {
      return this._undo(pending[0], null);
    }
    let outcome: UndoOutcome = { state: 'done', by: null };
    for (const change of [...pending].reverse()) {
      outcome = await this._undo(change, change.cellId);
      if (outcome.state !== 'done') {
        break;
      }
    }
    return outcome;
  }

  /**
   * Keep every pending change of a call.
   */
  keepCall(callId: string): Promise<void> {
    return this.keep(this.model.pendingOfCall(callId));
  }

  /**
   * Keep every change of the person's turn on a notebook.
   */
  async keepTurn(path: string): Promise<void> {
    const changes = this.model
      .turnOf(path)
      .flatMap(id => this.model.pendingOfCall(id));
    this.model.startTurn(path);
    await this.keep(changes);
  }

  /**
   * Undo the calls of the person's turn on a notebook, newest first; stops at the first
   * refusal.
   */
  async undoTurn(path: string): Promise<UndoOutcome> {
    let outcome: UndoOutcome = { state: 'done', by: null };
    for (const callId of this.model.turnOf(path)) {
      outcome = await this.undoCall(callId);
      if (outcome.state !== 'done') {
        break;
      }
    }
    return outcome;
  }

  private async _undo(
    change: IReviewChange,
    cellId: string | null
  ): Promise<UndoOutcome> {
    const event =
      cellId === null
        ? (this.model.callEvent(change.callId) ?? change.event)
        : change.event;
    this._clear(change.key);
    const outcome = await this._undoer.undo({
      path: change.path,
      callId: change.callId,
      cellId,
      event
    });
    if (outcome.state === 'done') {
      if (outcome.by !== null) {
        // The undo is the person's change, not an agent's.
        this.model.ignoreCall(outcome.by);
        this._marks?.ignoreCall(outcome.by);
      }
      this.model.setState(change.callId, cellId, 'undone');
      this._dismissMarks(change.callId, cellId, change.path);
      await this._store({
        path: change.path,
        call_ids: [change.callId],
        cell_id: cellId,
        state: 'undone'
      });
      if (outcome.by !== null) {
        // The undo's own call, kept as the person's: after a reload too it is no agent call.
        await this._store({
          path: change.path,
          call_ids: [outcome.by],
          cell_id: null,
          state: 'yours'
        });
      }
    } else if (outcome.state === 'fallback') {
      this._say(change.key, this._trans.__('Nothing could undo this change.'));
    } else {
      this._say(change.key, outcome.message);
    }
    return outcome;
  }

  private _dismissMarks(
    callId: string,
    cellId: string | null,
    path: string
  ): void {
    if (cellId === null) {
      this._marks?.removeCall(callId);
    } else {
      this._marks?.removeCell?.(path, cellId, callId);
    }
  }

  private _say(key: string, message: string): void {
    this._messages.set(key, message);
    this._messaged.emit({ key, message });
  }

  private _clear(key: string): void {
    if (this._messages.delete(key)) {
      this._messaged.emit({ key, message: '' });
    }
  }

  private _undoer: IUndoer;
  private _marks: ICellMarks | null;
  private _store: ReviewStore;
  private _trans: TranslationBundle;
  private _messages = new Map<string, string>();
  private _messaged = new Signal<this, IReviewMessage>(this);
}

/**
 * The namespace for {@link ReviewController} statics.
 */
export namespace ReviewController {
  /**
   * The options of a controller.
   */
  export interface IOptions {
    model: ReviewModel;
    /** How a change is undone. */
    undoer: IUndoer;
    /** The cell marks, dismissed with the changes they stand for. */
    marks?: ICellMarks | null;
    /** Where review states are kept (the server's activity history). */
    store?: ReviewStore;
    trans?: TranslationBundle;
  }
}

function byCall(
  changes: readonly IReviewChange[]
): Map<string, IReviewChange[]> {
  const groups = new Map<string, IReviewChange[]>();
  for (const change of changes) {
    const group = groups.get(change.callId) ?? [];
    group.push(change);
    groups.set(change.callId, group);
  }
  return groups;
}
