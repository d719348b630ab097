/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The `ask-before-run` cell tag: an agent's run reaches a tagged cell and waits for the
 * person's yes. The person sets it here through the lab's own cell model (the cell toolbar, a
 * command, or by hand in the cell's tags); agents cannot (the server refuses). Tagged cells are
 * marked in open notebooks with a class and a label, through the notebook's own cell widgets.
 */

import type { Cell, ICellModel } from '@jupyterlab/cells';
import type { Notebook, NotebookPanel } from '@jupyterlab/notebook';
import type { TranslationBundle } from '@jupyterlab/translation';
import { LabIcon } from '@jupyterlab/ui-components';
import type { IDisposable } from '@lumino/disposable';
import { PanelLayout, Widget } from '@lumino/widgets';

import { UNTRANSLATED } from '../translation';
import { afterThisChange } from '../core/schedule';

/**
 * The tag of cells that run only with the person's permission.
 */
export const ASK_BEFORE_RUN_TAG = 'ask-before-run';

/**
 * The class of a tagged cell (it draws the cell's border).
 */
export const ASK_BEFORE_RUN_CLASS = 'jp-xcsh-mod-askBeforeRun';

/**
 * The icon of the `ask-before-run` toggle (a raised hand).
 */
export const askBeforeRunIcon = new LabIcon({
  name: 'jupyter-xcsh:ask-before-run',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
    '<path class="jp-icon3" fill="#616161" d="M13 1.5a1.5 1.5 0 0 0-1.5 1.5v8h-1V4a1.5 ' +
    '1.5 0 0 0-3 0v9.6L5.2 11.3a1.6 1.6 0 0 0-2.3 2.2l5.4 6.3A6 6 0 0 0 12.9 22h1.6A5.5 ' +
    '5.5 0 0 0 20 16.5V7a1.5 1.5 0 0 0-3 0v4h-1V4a1.5 1.5 0 0 0-3 0v7h-.5V3A1.5 1.5 0 0 0 ' +
    '13 1.5z"/></svg>'
});

/**
 * The tags of a cell's metadata, whatever was stored there (only strings count).
 */
export function tagsOf(metadataTags: unknown): string[] {
  return Array.isArray(metadataTags)
    ? metadataTags.filter((t): t is string => typeof t === 'string')
    : [];
}

/**
 * Whether a cell's tags hold `ask-before-run`.
 */
export function hasAskBeforeRun(metadataTags: unknown): boolean {
  return tagsOf(metadataTags).includes(ASK_BEFORE_RUN_TAG);
}

/**
 * The tags with `ask-before-run` added or removed (the others kept, in order); `null` when
 * the tags are left empty (the key is removed, as the lab's tag editor does).
 */
export function withAskBeforeRun(
  metadataTags: unknown,
  on: boolean
): string[] | null {
  const tags = tagsOf(metadataTags).filter(t => t !== ASK_BEFORE_RUN_TAG);
  if (on) {
    tags.push(ASK_BEFORE_RUN_TAG);
  }
  return tags.length > 0 ? tags : null;
}

/**
 * Set or remove the tag of one cell, through the lab's model (undoable, saved, shared in a
 * collaborative notebook like any edit of the person's).
 */
export function setAskBeforeRun(model: ICellModel, on: boolean): void {
  const tags = withAskBeforeRun(model.getMetadata('tags'), on);
  if (tags === null) {
    model.deleteMetadata('tags');
  } else {
    model.setMetadata('tags', tags);
  }
}

/**
 * The label of a tagged cell.
 */
export class AskBeforeRunLabel extends Widget {
  constructor(trans: TranslationBundle) {
    super({ node: document.createElement('div') });
    this.addClass('jp-xcsh-AskBeforeRun');
    this.node.append(
      askBeforeRunIcon.element({
        tag: 'span',
        className: 'jp-xcsh-AskBeforeRun-icon'
      }),
      trans.__('Agents ask before running')
    );
    this.node.title = trans.__(
      'This cell has the tag "ask-before-run": an agent\'s run stops here until you allow it.'
    );
  }
}

/**
 * Marks the tagged cells of one open notebook, following its cells and their metadata.
 */
export class NotebookAskMarks implements IDisposable {
  /**
   * Follow the notebook shown in `panel`.
   */
  constructor(
    private readonly panel: NotebookPanel,
    private readonly trans: TranslationBundle = UNTRANSLATED
  ) {
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
    this.panel.content.modelChanged.disconnect(this._onModelChanged, this);
    this._model?.cells.changed.disconnect(this._schedule, this);
    for (const cell of [...this._marked]) {
      this._unmark(cell);
    }
  }

  /**
   * Apply the marks now.
   */
  refresh(): void {
    if (this._disposed) {
      return;
    }
    const tagged = new Set<Cell>();
    for (const cell of this.panel.content.widgets) {
      if (!this._followed.has(cell.model)) {
        this._followed.add(cell.model);
        cell.model.metadataChanged.connect(this._schedule, this);
      }
      if (
        cell.model.type === 'code' &&
        hasAskBeforeRun(cell.model.getMetadata('tags'))
      ) {
        tagged.add(cell);
      }
    }
    for (const cell of [...this._marked]) {
      if (!tagged.has(cell)) {
        this._unmark(cell);
      }
    }
    for (const cell of tagged) {
      cell.addClass(ASK_BEFORE_RUN_CLASS);
      this._marked.add(cell);
      if (this._labels.has(cell)) {
        continue;
      }
      const input = cell.inputArea?.parent;
      if (!input) {
        // Not rendered yet (a notebook renders its cells lazily): label it once it is.
        void cell.ready.then(() => this._schedule());
        continue;
      }
      // Below the cell's input, above its outputs.
      const label = new AskBeforeRunLabel(this.trans);
      const layout = cell.layout as PanelLayout;
      layout.insertWidget(layout.widgets.indexOf(input) + 1, label);
      this._labels.set(cell, label);
    }
  }

  private _onModelChanged(notebook: Notebook): void {
    this._model?.cells.changed.disconnect(this._schedule, this);
    this._model = notebook.model;
    this._model?.cells.changed.connect(this._schedule, this);
    this._schedule();
  }

  private _unmark(cell: Cell): void {
    this._labels.get(cell)?.dispose();
    this._labels.delete(cell);
    this._marked.delete(cell);
    if (!cell.isDisposed) {
      cell.removeClass(ASK_BEFORE_RUN_CLASS);
    }
  }

  private _model: Notebook['model'] = null;
  private _marked = new Set<Cell>();
  private _labels = new Map<Cell, AskBeforeRunLabel>();
  private _followed = new WeakSet<ICellModel>();
  /**
   * Refresh once the current change has been handled everywhere.
   */
  private readonly _schedule = afterThisChange(() => this.refresh());
  private _disposed = false;
}
