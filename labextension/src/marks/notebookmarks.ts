/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { Cell } from '@jupyterlab/cells';
import type { Notebook, NotebookPanel } from '@jupyterlab/notebook';
import type { TranslationBundle } from '@jupyterlab/translation';
import type { IDisposable } from '@lumino/disposable';
import { PanelLayout, Widget } from '@lumino/widgets';

import type { ICellMark } from '../tokens';
import { UNTRANSLATED } from '../translation';
import { type CellMarks, markTitle } from './model';
import { afterThisChange } from '../core/schedule';

/**
 * The class of a cell an agent changed (it draws the gutter bar).
 */
export const MARKED_CELL_CLASS = 'jp-xcsh-mod-agentChanged';

/**
 * The mark of a cell an agent changed: a dot at the start of the cell's input (below the
 * review's header, never over it) that says on hover and to screen readers what the agent did.
 * Nothing to click: the mark is the review's state, and goes when the change is kept or undone
 * (or when the person edits the cell).
 */
export class CellMarkWidget extends Widget {
  /**
   * Create the mark of one cell.
   */
  constructor(private readonly trans: TranslationBundle = UNTRANSLATED) {
    super({ node: document.createElement('span') });
    this.addClass('jp-xcsh-CellMark');
    this.node.setAttribute('role', 'note');
  }

  /**
   * The mark shown.
   */
  get mark(): ICellMark | null {
    return this._mark;
  }
  set mark(mark: ICellMark | null) {
    this._mark = mark;
    // Shown on hover by the stylesheet, read by screen readers.
    this.node.setAttribute(
      'aria-label',
      mark === null ? '' : markTitle(mark, this.trans)
    );
    this.node.dataset.action = mark?.action ?? '';
    this.node.dataset.callId = mark?.callId ?? '';
  }

  private _mark: ICellMark | null = null;
}

/**
 * Shows the marks of one open notebook on its cells, through the notebook's
 * own cell widgets: a class on the cell and a mark widget in its layout.
 */
export class NotebookMarks implements IDisposable {
  /**
   * Follow the marks of the notebook shown in `panel`.
   */
  constructor(
    private readonly panel: NotebookPanel,
    private readonly marks: CellMarks,
    options: NotebookMarks.IOptions = {}
  ) {
    this._trans = options.trans ?? UNTRANSLATED;
    this._enabled = options.enabled ?? (() => true);
    marks.changed.connect(this._onMarksChanged, this);
    panel.content.modelChanged.connect(this._onModelChanged, this);
    panel.disposed.connect(() => this.dispose());
    this._onModelChanged(panel.content);
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this.marks.changed.disconnect(this._onMarksChanged, this);
    this.panel.content.modelChanged.disconnect(this._onModelChanged, this);
    this._model?.contentChanged.disconnect(this._schedule, this);
    for (const cell of [...this._shown.keys()]) {
      this._unmark(cell);
    }
  }

  /**
   * Apply the marks to the cells now.
   */
  refresh(): void {
    if (this._disposed) {
      return;
    }
    const notebook = this.panel.content;
    const marks = this.marks.marksOf(this.panel.context.path);
    const enabled = this._enabled();
    const wanted = new Map<Cell, ICellMark>();
    if (marks.length > 0) {
      const byId = new Map<string, Cell>();
      for (const cell of notebook.widgets) {
        byId.set(cell.model.id, cell);
      }
      for (const mark of marks) {
        const cell =
          mark.cellId !== null
            ? byId.get(mark.cellId)
            : notebook.widgets[mark.cellIndex];
        if (cell === undefined || cell.isDisposed) {
          continue;
        }
        const source = cell.model.sharedModel.getSource();
        // Observed while hidden too, so that a person's edit meanwhile still ends the mark.
        const state = this.marks.observe(mark, source);
        if (state === 'shown' && enabled) {
          wanted.set(cell, mark);
        }
      }
    }
    for (const cell of [...this._shown.keys()]) {
      if (!wanted.has(cell)) {
        this._unmark(cell);
      }
    }
    for (const [cell, mark] of wanted) {
      this._mark(cell, mark);
    }
  }

  private _onMarksChanged(_: CellMarks, path: string): void {
    if (path === this.panel.context.path) {
      this._schedule();
    }
  }

  private _onModelChanged(notebook: Notebook): void {
    this._model?.contentChanged.disconnect(this._schedule, this);
    this._model = notebook.model;
    this._model?.contentChanged.connect(this._schedule, this);
    this._schedule();
  }

  private _mark(cell: Cell, mark: ICellMark): void {
    let widget = this._shown.get(cell);
    if (widget === undefined || widget.isDisposed) {
      widget = new CellMarkWidget(this._trans);
      // In the input's row, below a review header the cell may have above it.
      const input = cell.inputArea?.parent;
      (
        ((input?.layout as PanelLayout | null) ?? cell.layout) as PanelLayout
      ).addWidget(widget);
      cell.addClass(MARKED_CELL_CLASS);
      this._shown.set(cell, widget);
    }
    if (widget.mark !== mark) {
      widget.mark = mark;
    }
  }

  private _unmark(cell: Cell): void {
    const widget = this._shown.get(cell);
    this._shown.delete(cell);
    widget?.dispose();
    if (!cell.isDisposed) {
      cell.removeClass(MARKED_CELL_CLASS);
    }
  }

  private _trans: TranslationBundle;
  private _enabled: () => boolean;
  private _model: Notebook['model'] = null;
  private _shown = new Map<Cell, CellMarkWidget>();
  /**
   * Refresh once the current change has been handled everywhere.
   */
  private readonly _schedule = afterThisChange(() => this.refresh());
  private _disposed = false;
}

/**
 * The namespace for {@link NotebookMarks} statics.
 */
export namespace NotebookMarks {
  /**
   * The options of a notebook's marks.
   */
  export interface IOptions {
    /** The extension's strings in the lab's language. */
    trans?: TranslationBundle;
    /** Whether marks are shown (a setting); {@link NotebookMarks.refresh} applies a change. */
    enabled?: () => boolean;
  }
}
