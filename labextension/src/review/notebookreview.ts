/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * Shows the changes under review in one open notebook: a diff above each agent-changed cell,
 * a ghost of each deleted cell at its old position (above the cell now there, or below the
 * last one), and a review bar over the notebook with the count of pending changes and Keep all
 * / Undo all for the person's turn.
 */

import type { Cell } from '@jupyterlab/cells';
import type { Notebook, NotebookPanel } from '@jupyterlab/notebook';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { IDisposable } from '@lumino/disposable';
import { PanelLayout, Widget } from '@lumino/widgets';

import type { ReviewController } from './controller';
import { summarizeOutputs, type IOutputSummary } from './diff';
import { changedCells, type IReviewChange, type ReviewModel } from './model';
import { renderChange, type IReviewView } from './render';

/**
 * The class of a cell with a change under review.
 */
export const REVIEWED_CELL_CLASS = 'jp-xcsh-mod-underReview';

/**
 * A change's header and diff, placed in a cell (or as the ghost of a deleted cell).
 */
export class ReviewWidget extends Widget {
  /**
   * Create the view of one change.
   */
  constructor(ghost: boolean) {
    super();
    this.addClass('jp-xcsh-Review');
    if (ghost) {
      this.addClass('jp-xcsh-ReviewGhost');
    }
    // Keys typed here are not the notebook's.
    this.node.addEventListener('mousedown', event => event.stopPropagation());
  }

  /** The change shown. */
  change: IReviewChange | null = null;
  /** What was last rendered (to render only when it changes). */
  signature = '';
}

/**
 * The review bar over a notebook: the count of pending changes, Keep all, Undo all.
 */
export class ReviewBar extends Widget {
  /**
   * Create the bar.
   */
  constructor(
    private readonly trans: TranslationBundle,
    private readonly actions: {
      keepAll(): void;
      undoAll(): void;
      next(): void;
      previous(): void;
    }
  ) {
    super();
    this.addClass('jp-xcsh-ReviewBar');
    this.hide();
  }

  /**
   * Show the bar for `count` cells with pending changes (hidden when none), with a message.
   */
  setCount(count: number, message: string | null): void {
    const signature = `${count}|${message}`;
    if (signature === this._signature) {
      return;
    }
    this._signature = signature;
    this.setHidden(count === 0 && message === null);
    const trans = this.trans;
    const node = this.node;
    node.replaceChildren();
    const label = document.createElement('span');
    label.className = 'jp-xcsh-ReviewBar-count';
    label.textContent = trans._n(
      '%1 cell with agent changes to review',
      '%1 cells with agent changes to review',
      count
    );
    node.append(label);
    const add = (text: string, cls: string, title: string, act: () => void) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = `jp-xcsh-Review-button ${cls}`;
      b.textContent = text;
      b.title = title;
      b.addEventListener('click', () => act());
      node.append(b);
    };
    if (count > 0) {
      add(
        '\u2191',
        'jp-xcsh-ReviewBar-previous',
        trans.__('Previous change (Accel Alt ,)'),
        this.actions.previous
      );
      add(
        '\u2193',
        'jp-xcsh-ReviewBar-next',
        trans.__('Next change (Accel Alt .)'),
        this.actions.next
      );
      add(
        trans.__('Keep all'),
        'jp-xcsh-ReviewBar-keepAll',
        trans.__('Keep every change of this turn (Accel Alt Shift Y)'),
        this.actions.keepAll
      );
      add(
        trans.__('Undo all'),
        'jp-xcsh-ReviewBar-undoAll',
        trans.__('Undo every change of this turn (Accel Alt Shift N)'),
        this.actions.undoAll
      );
    }
    if (message !== null) {
      const m = document.createElement('span');
      m.className = 'jp-xcsh-Review-message';
      m.setAttribute('role', 'alert');
      m.textContent = message;
      node.append(m);
    }
  }

  private _signature = '';
}

/**
 * The review of one open notebook.
 */
export class NotebookReview implements IDisposable {
  /**
   * Follow the changes under review of the notebook shown in `panel`.
   */
  constructor(
    readonly panel: NotebookPanel,
    private readonly controller: ReviewController,
    private readonly trans: TranslationBundle
  ) {
    this._model = controller.model;
    this.bar = new ReviewBar(trans, {
      keepAll: () => void controller.keepTurn(this.path),
      undoAll: () => void this.undoAll(),
      next: () => this.step(1),
      previous: () => this.step(-1)
    });
    panel.contentHeader.addWidget(this.bar);
    this._model.changed.connect(this._onChanged, this);
    controller.messaged.connect(this._schedule, this);
    panel.content.modelChanged.connect(this._onModelChanged, this);
    panel.disposed.connect(() => this.dispose());
    this._onModelChanged(panel.content);
  }

  /** The review bar. */
  readonly bar: ReviewBar;

  /** The notebook's path. */
  get path(): string {
    return this.panel.context.path;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._model.changed.disconnect(this._onChanged, this);
    this.controller.messaged.disconnect(this._schedule, this);
    this.panel.content.modelChanged.disconnect(this._onModelChanged, this);
    this._notebookModel?.contentChanged.disconnect(this._schedule, this);
    for (const widget of this._widgets.values()) {
      this._remove(widget);
    }
    this._widgets.clear();
    this.bar.dispose();
  }

  /**
   * Undo every change of the turn; a refusal shows in the bar.
   */
  async undoAll(): Promise<void> {
    const outcome = await this.controller.undoTurn(this.path);
    this._barMessage =
      outcome.state === 'refused' || outcome.state === 'failed'
        ? outcome.message
        : null;
    this.refresh();
  }

  /**
   * Make the next (1) or previous (-1) cell with a change the active cell.
   */
  step(direction: 1 | -1): void {
    const notebook = this.panel.content;
    const indexes = new Set<number>();
    for (const change of this._model.pendingOf(this.path)) {
      const index = this._cellIndexOf(change);
      if (index !== null) {
        indexes.add(Math.min(index, notebook.widgets.length - 1));
      }
    }
    const sorted = [...indexes].filter(i => i >= 0).sort((a, b) => a - b);
    if (sorted.length === 0) {
      return;
    }
    const active = notebook.activeCellIndex;
    const next =
      direction === 1
        ? (sorted.find(i => i > active) ?? sorted[0])
        : ([...sorted].reverse().find(i => i < active) ??
          sorted[sorted.length - 1]);
    notebook.activeCellIndex = next;
    void notebook.scrollToItem(next, 'center');
  }

  /**
   * The change of the active cell (the newest pending one), or `null`.
   */
  activeChange(): IReviewChange | null {
    const cell = this.panel.content.activeCell;
    if (!cell) {
      return null;
    }
    return (
      this._model.pendingOfCell(this.path, cell.model.id) ??
      // A ghost shown above the active cell.
      this._model
        .pendingOf(this.path)
        .filter(c => c.action === 'delete' && this._anchorOf(c)?.cell === cell)
        .pop() ??
      null
    );
  }

  /**
   * Show the changes now.
   */
  refresh(): void {
    if (this._disposed) {
      return;
    }
    const pending = this._model.pendingOf(this.path);
    const wanted = new Map<string, IReviewChange>();
    // The newest pending change of each cell; every pending delete as a ghost.
    for (const change of pending) {
      const key =
        change.action === 'delete'
          ? `ghost:${change.key}`
          : change.cellId !== null
            ? `id:${change.cellId}`
            : `#${change.cellIndex}`;
      wanted.set(key, change);
    }
    for (const [key, widget] of this._widgets) {
      if (!wanted.has(key)) {
        this._remove(widget);
        this._widgets.delete(key);
      }
    }
    for (const [key, change] of wanted) {
      this._show(key, change);
    }
    this.bar.setCount(changedCells(pending), this._barMessage);
  }

  private _show(key: string, change: IReviewChange): void {
    const ghost = change.action === 'delete';
    const place = ghost ? this._anchorOf(change) : this._cellOf(change);
    let widget = this._widgets.get(key);
    if (place === null) {
      if (widget !== undefined) {
        this._remove(widget);
        this._widgets.delete(key);
      }
      return;
    }
    const { cell, at } = place;
    const layout = cell.layout as PanelLayout;
    if (widget === undefined || widget.isDisposed || widget.parent !== cell) {
      if (widget !== undefined) {
        this._remove(widget);
      }
      widget = new ReviewWidget(ghost);
      this._widgets.set(key, widget);
    }
    if (widget.parent !== cell) {
      if (at === 'end') {
        layout.addWidget(widget);
      } else {
        layout.insertWidget(0, widget);
      }
    }
    if (!ghost) {
      cell.addClass(REVIEWED_CELL_CLASS);
    }
    const view = this._view(change, ghost ? null : cell);
    const signature = JSON.stringify([change.key, view]);
    if (widget.change === change && widget.signature === signature) {
      return;
    }
    widget.change = change;
    widget.signature = signature;
    renderChange(
      widget.node,
      change,
      view,
      {
        keep: () => void this.controller.keep([change]),
        undo: () => void this.controller.undo(change),
        keepCall: () => void this.controller.keepCall(change.callId),
        undoCall: () => void this.controller.undoCall(change.callId),
        toggleDiff: () => {
          this._ui(change).expanded = !this._ui(change).expanded;
          this.refresh();
        },
        toggleLayout: () => {
          this._ui(change).sideBySide = !this._ui(change).sideBySide;
          this.refresh();
        }
      },
      this.trans
    );
  }

  private _view(change: IReviewChange, cell: Cell | null): IReviewView {
    const ui = this._ui(change);
    let changedSince = false;
    let outputs: IOutputSummary | null = null;
    if (cell !== null) {
      const source = cell.model.sharedModel.getSource();
      changedSince = change.after !== null && source !== change.after;
      if (change.outputsBefore !== null) {
        const now = (cell.model.toJSON() as { outputs?: unknown[] }).outputs;
        outputs = summarizeOutputs(change.outputsBefore, now ?? []);
      }
    }
    return {
      expanded: ui.expanded,
      sideBySide: ui.sideBySide,
      message: this.controller.messageOf(change.key),
      changedSince,
      outputs,
      callChanges: this._model.pendingOfCall(change.callId).length
    };
  }

  private _ui(change: IReviewChange): {
    expanded: boolean;
    sideBySide: boolean;
  } {
    let ui = this._uiState.get(change.key);
    if (ui === undefined) {
      ui = {
        expanded: change.action === 'edit' || change.action === 'delete',
        sideBySide: false
      };
      this._uiState.set(change.key, ui);
    }
    return ui;
  }

  private _cellIndexOf(change: IReviewChange): number | null {
    if (change.action === 'delete') {
      return change.cellIndex;
    }
    const cells = this.panel.content.widgets;
    if (change.cellId !== null) {
      const index = cells.findIndex(c => c.model.id === change.cellId);
      return index >= 0 ? index : null;
    }
    return change.cellIndex < cells.length ? change.cellIndex : null;
  }

  private _cellOf(change: IReviewChange): { cell: Cell; at: 'start' } | null {
    const index = this._cellIndexOf(change);
    const cell = index === null ? undefined : this.panel.content.widgets[index];
    return cell === undefined || cell.isDisposed ? null : { cell, at: 'start' };
  }

  /**
   * Where a deleted cell's ghost goes: above the cell now at its old index, or below the last
   * cell; `null` when the cell is back in the notebook (or the notebook is empty).
   */
  private _anchorOf(
    change: IReviewChange
  ): { cell: Cell; at: 'start' | 'end' } | null {
    const cells = this.panel.content.widgets;
    if (
      change.cellId !== null &&
      cells.some(c => c.model.id === change.cellId)
    ) {
      return null;
    }
    if (cells.length === 0) {
      return null;
    }
    if (change.cellIndex < cells.length) {
      return { cell: cells[change.cellIndex], at: 'start' };
    }
    return { cell: cells[cells.length - 1], at: 'end' };
  }

  private _remove(widget: ReviewWidget): void {
    const cell = widget.parent;
    widget.dispose();
    if (
      cell !== null &&
      !cell.isDisposed &&
      ![...this._widgets.values()].some(
        w =>
          w !== widget &&
          w.parent === cell &&
          !w.hasClass('jp-xcsh-ReviewGhost')
      )
    ) {
      cell.removeClass(REVIEWED_CELL_CLASS);
    }
  }

  private _onChanged(_: ReviewModel, path: string): void {
    if (path === this.path) {
      this._barMessage = null;
      this._schedule();
    }
  }

  private _onModelChanged(notebook: Notebook): void {
    this._notebookModel?.contentChanged.disconnect(this._schedule, this);
    this._notebookModel = notebook.model;
    this._notebookModel?.contentChanged.connect(this._schedule, this);
    this._schedule();
  }

  /**
   * Refresh once the current signal has been handled everywhere (the notebook creates the
   * widget of a new cell in its own handler of the same change).
   */
  private _schedule(): void {
    if (this._scheduled) {
      return;
    }
    this._scheduled = true;
    void Promise.resolve().then(() => {
      this._scheduled = false;
      this.refresh();
    });
  }

  private _model: ReviewModel;
  private _notebookModel: Notebook['model'] = null;
  private _widgets = new Map<string, ReviewWidget>();
  private _uiState = new Map<
    string,
    { expanded: boolean; sideBySide: boolean }
  >();
  private _barMessage: string | null = null;
  private _scheduled = false;
  private _disposed = false;
}
