/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { IDisposable } from '@lumino/disposable';
import type { ISignal } from '@lumino/signaling';
import type { Title, Widget } from '@lumino/widgets';

import type { ActivityChange, ActivityModel } from '../core/activity';

/**
 * The class of the panel's tab while it has unseen calls.
 */
export const UNREAD_CLASS = 'jp-xcsh-mod-unread';

/**
 * The title dataset key of the unseen count: the tab's `data-xcsh-unread`.
 */
export const UNREAD_KEY = 'xcsh-unread';

/**
 * A panel whose tab carries the badge: its title, whether it is shown, and
 * when it is shown.
 */
export interface IBadgedPanel {
  readonly title: Title<Widget>;
  readonly isVisible: boolean;
  readonly shown: ISignal<unknown, void>;
}

/**
 * Counts the calls that arrive while the activity panel is hidden and shows
 * the count on the panel's tab (through its Lumino title: a class and a
 * `data-xcsh-unread` attribute the tab bar renders); showing the panel clears
 * it.
 */
export class UnreadBadge implements IDisposable {
  /**
   * Badge the tab of `panel` with the calls `model` gains while it is hidden.
   */
  constructor(
    private readonly panel: IBadgedPanel,
    private readonly model: ActivityModel
  ) {
    this._caption = panel.title.caption;
    model.changed.connect(this._onChanged, this);
    panel.shown.connect(this.clear, this);
  }

  /**
   * How many calls arrived since the panel was last shown.
   */
  get count(): number {
    return this._count;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /**
   * Forget the unseen calls (the panel was shown).
   */
  clear(): void {
    this._set(0);
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this.model.changed.disconnect(this._onChanged, this);
    this.panel.shown.disconnect(this.clear, this);
    this._set(0);
  }

  private _onChanged(_: ActivityModel, change: ActivityChange): void {
    if (change.type === 'added' && !change.restored && !this.panel.isVisible) {
      this._set(this._count + 1);
    }
  }

  private _set(count: number): void {
    if (count === this._count) {
      return;
    }
    this._count = count;
    const title = this.panel.title;
    // The shell keeps its own entries in the dataset (the tab's `data-id`); the tab bar renders
    // each key as a `data-<key>` attribute.
    const dataset = { ...title.dataset };
    delete dataset[UNREAD_KEY];
    if (count === 0) {
      title.className = title.className.replace(UNREAD_CLASS, '').trim();
      title.dataset = dataset;
      title.caption = this._caption;
      return;
    }
    if (!title.className.includes(UNREAD_CLASS)) {
      title.className = `${title.className} ${UNREAD_CLASS}`.trim();
    }
    const label = count > 99 ? '99+' : String(count);
    title.dataset = { ...dataset, [UNREAD_KEY]: label };
    title.caption = `${this._caption} (${count} new)`;
  }

  private _count = 0;
  private _caption: string;
  private _disposed = false;
}
