/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { ITranslator, TranslationBundle } from '@jupyterlab/translation';
import {
  clearIcon,
  HTMLSelect,
  ReactWidget,
  Toolbar,
  ToolbarButton
} from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { ISignal, Signal } from '@lumino/signaling';
import { PanelLayout, Widget } from '@lumino/widgets';
import React from 'react';

import { translationBundle } from '../translation';
import { h } from '../core/dom';
import {
  ActivityCall,
  ActivityFilter,
  ActivityChange,
  ActivityModel,
  INotebookCall,
  IPythonCall
} from '../core/activity';
import { renderNotebookCall } from './rendernotebook';
import { BlockLanguage, CallRenderer, IRenderContext } from './renderparts';
import { renderPythonCall } from './renderpython';

/**
 * The sidebar panel listing agents' tool calls, newest first.
 *
 * It only renders its model: each call is one element, rebuilt when the
 * call or the expanded state of one of its parts changes.
 */
/**
 * JupyterLab 4.1 runs a toolbar button on mouse down unless `actualOnClick` asks for the
 * click (a keyboard's Enter and a programmatic click only send the click); newer releases
 * run it on the click and no longer know the option (spread, so their types accept it).
 */
const ON_CLICK = { actualOnClick: true };

export class ActivityPanel extends Widget {
  /**
   * Create a panel.
   */
  constructor(options: ActivityPanel.IOptions) {
    super();
    this.model = options.model;
    this._actions = options.actions;
    this._highlighter = options.highlighter ?? null;
    this._renderers = new Map<string, CallRenderer>([
      ['notebook', renderNotebookCall as CallRenderer],
      ['python', renderPythonCall as CallRenderer],
      ...Object.entries(options.renderers ?? {})
    ]);
    const trans = translationBundle(options.translator);
    this._trans = trans;
    this.addClass('jp-xcsh-ActivityPanel');

    // The lab's own toolbar, select and button (their styles, keyboard and themes).
    this._filterSelect = new FilterSelect(trans, kind =>
      this._run(() => this._actions.filter(kind))
    );
    this.toolbar = new Toolbar();
    this.toolbar.addClass('jp-xcsh-Toolbar');
    this.toolbar.addItem('filter', this._filterSelect);
    this.toolbar.addItem('spacer', Toolbar.createSpacerItem());
    this.toolbar.addItem(
      'clear',
      new ToolbarButton({
        ...ON_CLICK,
        icon: clearIcon,
        label: trans.__('Clear'),
        tooltip: trans.__('Remove finished calls from the list'),
        className: 'jp-xcsh-Clear',
        onClick: () => this._run(() => this._actions.clear())
      })
    );
    this._count = h('span', { class: 'jp-xcsh-Count', 'aria-live': 'polite' });

    this._empty = h('p', { class: 'jp-xcsh-Empty' });
    // No agent yet: here is how to connect one.
    this._connect = h(
      'button',
      { class: 'jp-mod-styled jp-xcsh-ConnectAgent', type: 'button' },
      trans.__('Connect an agent…')
    );
    const connectAgent = options.connectAgent;
    this._connect.addEventListener('click', () => connectAgent?.());
    this._hasConnect = connectAgent !== undefined;
    this._list = h('div', { class: 'jp-xcsh-CallList' });
    const layout = new PanelLayout();
    this.layout = layout;
    layout.addWidget(
      new Widget({
        node: h(
          'div',
          { class: 'jp-xcsh-PanelHeader' },
          h('h2', { class: 'jp-xcsh-PanelTitle' }, trans.__('Agent activity')),
          this._count
        )
      })
    );
    layout.addWidget(this.toolbar);
    layout.addWidget(
      new Widget({
        node: h(
          'div',
          { class: 'jp-xcsh-EmptyBlock' },
          this._empty,
          this._connect
        )
      })
    );
    layout.addWidget(new Widget({ node: this._list }));

    this._context = {
      trans,
      isOpen: (key, byDefault = false) => this._open.get(key) ?? byDefault,
      toggle: (key, byDefault = false) => {
        this._open.set(key, !(this._open.get(key) ?? byDefault));
        for (const id of this._rendered.keys()) {
          if (key === id || key.startsWith(`${id}/`)) {
            this._dirtyCalls.add(id);
          }
        }
        this._refresh();
      },
      highlight: (code, language, element) =>
        this._highlight(code, language, element),
      openNotebook: (path, cellIndex) =>
        this._run(() => this._actions.openNotebook(path, cellIndex)),
      openArtifact: path => this._run(() => this._actions.openArtifact(path)),
      interrupt: call => this._run(() => this._actions.interrupt(call)),
      answer: (call, value) =>
        this._run(() => this._actions.answer(call, value)),
      undo: call => this._run(() => this._actions.undo(call)),
      keep: call => this._run(() => this._actions.keep(call))
    };

    this.model.changed.connect(this._onModelChanged, this);
    this._sync();
  }

  /**
   * The calls the panel shows.
   */
  readonly model: ActivityModel;

  /**
   * The panel's toolbar: the filter and the clear button.
   */
  readonly toolbar: Toolbar;

  /**
   * Emitted each time the panel is shown.
   */
  get shown(): ISignal<this, void> {
    return this._shown;
  }

  /**
   * Which calls are listed.
   */
  get filter(): ActivityFilter {
    return this._filter;
  }
  set filter(value: ActivityFilter) {
    this._filter = value;
    this._filterSelect.filter = value;
    this._sync();
  }

  /**
   * Show another plugin's section above the calls, below the toolbar.
   */
  addSection(section: Widget): void {
    const layout = this.layout as PanelLayout;
    layout.insertWidget(layout.widgets.indexOf(this.toolbar) + 1, section);
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.model.changed.disconnect(this._onModelChanged, this);
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    if (this._stale) {
      this._sync();
    }
    this._shown.emit();
  }

  protected onAfterAttach(msg: Message): void {
    if (this._stale && this.isVisible) {
      this._sync();
    }
  }

  private _onModelChanged(_: ActivityModel, change: ActivityChange): void {
    if (change.type === 'removed') {
      this._forget(change.id);
    }
    this._refresh();
  }

  /**
   * Render now when visible, else when the panel is shown: a hidden sidebar
   * costs nothing while an agent streams output.
   */
  private _refresh(): void {
    if (this.isVisible) {
      this._sync();
    } else {
      this._stale = true;
    }
  }

  /**
   * Reconcile the call elements with the model: render new and changed
   * calls, drop removed ones, keep newest-first order and apply the filter.
   */
  private _sync(): void {
    this._stale = false;
    try {
      const calls = this.model.calls;
      const live = new Set(calls.map(call => call.id));
      for (const [id, rendered] of this._rendered) {
        if (!live.has(id)) {
          rendered.element.remove();
          this._rendered.delete(id);
        }
      }
      let next: ChildNode | null = this._list.firstChild;
      let shown = 0;
      for (const call of calls) {
        const previous = this._rendered.get(call.id)?.element;
        const element = this._renderIfChanged(call);
        if (previous !== undefined && previous === next) {
          // Re-rendered in place: the new element took the old one's spot.
          next = element;
        }
        element.hidden = this._filter !== 'all' && this._filter !== call.kind;
        if (!element.hidden) {
          shown++;
        }
        if (element !== next) {
          this._list.insertBefore(element, next);
        } else {
          next = next.nextSibling;
        }
      }
      this._updateSummary(calls.length, shown);
    } catch (error) {
      console.error('jupyter-xcsh: could not render the activity panel', error);
    }
  }

  private _renderIfChanged(call: ActivityCall): HTMLElement {
    const rendered = this._rendered.get(call.id);
    if (
      rendered !== undefined &&
      rendered.version === call.version &&
      !this._dirtyCalls.has(call.id)
    ) {
      return rendered.element;
    }
    this._dirtyCalls.delete(call.id);
    const element = this._renderCall(call);
    if (rendered !== undefined) {
      const focusKey = focusedKey(rendered.element);
      rendered.element.replaceWith(element);
      if (focusKey !== null) {
        for (const target of element.querySelectorAll<HTMLElement>(
          '[data-xcsh-key]'
        )) {
          if (target.dataset.xcshKey === focusKey) {
            target.focus();
            break;
          }
        }
      }
    }
    this._rendered.set(call.id, { element, version: call.version });
    return element;
  }

  /**
   * Render one call; a call that cannot be rendered says so instead of
   * breaking the panel.
   */
  private _renderCall(call: ActivityCall): HTMLElement {
    try {
      const render = this._renderers.get(call.kind);
      if (render === undefined) {
        throw new Error(`no renderer for ${call.kind} entries`);
      }
      return render(call, this._context);
    } catch (error) {
      console.error('jupyter-xcsh: could not render a call', error);
      return h(
        'article',
        {
          class: 'jp-xcsh-Call',
          'data-kind': call.kind,
          'data-call-id': call.id
        },
        h(
          'div',
          { class: 'jp-xcsh-Error' },
          call.kind === 'notebook'
            ? this._trans.__('This notebook call could not be shown.')
            : this._trans.__('This python call could not be shown.')
        )
      );
    }
  }

  private _updateSummary(total: number, shown: number): void {
    const trans = this._trans;
    this._count.textContent =
      total === 0 ? '' : trans._n('%1 call', '%1 calls', shown);
    this._empty.hidden = shown > 0;
    this._connect.hidden = total > 0 || !this._hasConnect;
    this._empty.textContent =
      total === 0
        ? trans.__(
            'No agent activity yet. Notebook and python tool calls appear here as they happen.'
          )
        : trans.__('No calls of this kind.');
  }

  /**
   * Forget the expanded state of a removed call's parts.
   */
  private _forget(id: string): void {
    for (const key of [...this._open.keys()]) {
      if (key === id || key.startsWith(`${id}/`)) {
        this._open.delete(key);
      }
    }
    this._dirtyCalls.delete(id);
  }

  private _highlight(
    code: string,
    language: BlockLanguage,
    element: HTMLElement
  ): void {
    const cacheKey = `${language}\n${code}`;
    const cached = this._highlighted.get(cacheKey);
    if (cached !== undefined) {
      element.appendChild(cached.cloneNode(true));
      return;
    }
    element.textContent = code;
    const highlighter = this._highlighter;
    if (highlighter === null || language === null || code === '') {
      return;
    }
    const target = document.createElement('span');
    highlighter(code, language, target)
      .then(() => {
        const fragment = document.createDocumentFragment();
        fragment.append(...target.childNodes);
        // The element may have been replaced by a newer render meanwhile.
        if (element.isConnected && element.textContent === code) {
          element.replaceChildren(fragment.cloneNode(true));
        }
        if (code.length > HIGHLIGHT_CACHE_MAX_CHARS) {
          return;
        }
        if (this._highlighted.size >= HIGHLIGHT_CACHE_SIZE) {
          const oldest = this._highlighted.keys().next().value;
          if (oldest !== undefined) {
            this._highlighted.delete(oldest);
          }
        }
        this._highlighted.set(cacheKey, fragment);
      })
      .catch(() => {
        // Plain text is already in place.
      });
  }

  /**
   * Run an action of a link or button; its failure is logged, never thrown
   * into the lab.
   */
  private _run(action: () => Promise<unknown> | void): void {
    try {
      void Promise.resolve(action()).catch(error =>
        console.warn('jupyter-xcsh: activity panel action failed', error)
      );
    } catch (error) {
      console.warn('jupyter-xcsh: activity panel action failed', error);
    }
  }

  private _shown = new Signal<this, void>(this);
  private _trans: TranslationBundle;
  private _actions: ActivityPanel.IActions;
  private _renderers: Map<string, CallRenderer>;
  private _highlighter: ActivityPanel.Highlighter | null;
  private _context: IRenderContext;
  private _filter: ActivityFilter = 'all';
  private _filterSelect: FilterSelect;
  private _count: HTMLElement;
  private _empty: HTMLElement;
  private _connect: HTMLElement;
  private _hasConnect: boolean;
  private _list: HTMLElement;
  private _rendered = new Map<
    string,
    { element: HTMLElement; version: number }
  >();
  private _dirtyCalls = new Set<string>();
  private _open = new Map<string, boolean>();
  private _highlighted = new Map<string, DocumentFragment>();
  private _stale = false;
}

/**
 * The toolbar's choice of which calls are listed.
 */
class FilterSelect extends ReactWidget {
  constructor(
    private readonly _trans: TranslationBundle,
    private readonly _choose: (kind: ActivityFilter) => void
  ) {
    super();
    this.addClass('jp-xcsh-FilterItem');
  }

  /**
   * The choice shown.
   */
  get filter(): ActivityFilter {
    return this._filter;
  }
  set filter(value: ActivityFilter) {
    if (value !== this._filter) {
      this._filter = value;
      this.update();
    }
  }

  protected render(): React.ReactElement {
    const trans = this._trans;
    return React.createElement(HTMLSelect, {
      className: 'jp-xcsh-Filter',
      'aria-label': trans.__('Show calls of'),
      value: this._filter,
      onChange: (event: React.ChangeEvent<HTMLSelectElement>) =>
        this._choose(event.target.value as ActivityFilter),
      options: [
        { value: 'all', label: trans.__('All calls') },
        { value: 'notebook', label: trans.__('Notebook') },
        { value: 'python', label: trans.__('Python') }
      ]
    });
  }

  private _filter: ActivityFilter = 'all';
}

/**
 * How many highlighted texts are kept for re-renders.
 */
const HIGHLIGHT_CACHE_SIZE = 200;

/**
 * The longest text whose highlighting is kept (longer ones are redone).
 */
const HIGHLIGHT_CACHE_MAX_CHARS = 20000;

/**
 * The `data-xcsh-key` of the focused element inside `element`, if any.
 */
function focusedKey(element: HTMLElement): string | null {
  const active = document.activeElement;
  if (active instanceof HTMLElement && element.contains(active)) {
    return active.dataset.xcshKey ?? null;
  }
  return null;
}

/**
 * The namespace for {@link ActivityPanel} statics.
 */
export namespace ActivityPanel {
  /**
   * What the panel's links and buttons do.
   */
  export interface IActions {
    /**
     * Open a notebook, scrolled to a cell when `cellIndex` is not null.
     */
    openNotebook(path: string, cellIndex: number | null): Promise<unknown>;

    /**
     * Open an artifact file in the lab.
     */
    openArtifact(path: string): Promise<unknown>;

    /**
     * Cancel a running python call.
     */
    interrupt(call: IPythonCall): Promise<unknown>;

    /**
     * Answer the prompt a python call waits on.
     */
    answer(call: IPythonCall, value: string): Promise<unknown>;

    /**
     * Undo a notebook call's changes (the review's undo).
     */
    undo(call: INotebookCall): Promise<unknown>;

    /**
     * Keep a notebook call's changes (the review's keep).
     */
    keep(call: INotebookCall): Promise<unknown>;

    /**
     * Remove finished calls from the list.
     */
    clear(): Promise<unknown>;

    /**
     * List only the calls of one kind.
     */
    filter(kind: ActivityFilter): Promise<unknown>;
  }

  /**
   * Fill `element` with `code` highlighted as `language`.
   */
  export type Highlighter = (
    code: string,
    language: 'python' | 'markdown',
    element: HTMLElement
  ) => Promise<void>;

  /**
   * The options of a panel.
   */
  export interface IOptions {
    /**
     * The calls to show.
     */
    model: ActivityModel;

    /**
     * What links and buttons do.
     */
    actions: IActions;

    /**
     * Syntax highlighting of code and markdown; plain text without it.
     */
    highlighter?: Highlighter;
    /**
     * How entries of a kind are rendered, beside the panel's own (`notebook`, `python`),
     * which one given here replaces: each renders one line that expands on click (see
     * `callHeader`).
     */
    renderers?: Record<string, CallRenderer>;

    /**
     * Opens the "Connect an agent" dialog; the empty panel offers it when given.
     */
    connectAgent?: () => void;

    /**
     * The lab's translator; the strings are shown as written without it.
     */
    translator?: ITranslator | null;
  }
}
