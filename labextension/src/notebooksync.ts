/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The common part of keeping open notebooks in step with the server's events (`livesync.ts`
 * for agent edits, `runsync.ts` for the outputs of runs in place): each event goes to every
 * notebook open on its path, one event at a time per notebook, in the order the server sent
 * them.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { Event } from '@jupyterlab/services';

/**
 * Follows one kind of the server's notebook events and applies them to open notebooks.
 */
export abstract class NotebookEventSync<T extends { path: string }> {
  constructor(
    protected readonly app: JupyterFrontEnd,
    protected readonly panels: () => Iterable<NotebookPanel>
  ) {}

  /**
   * Start following the server's events.
   */
  start(): void {
    this.app.serviceManager.events.stream.connect(this._onEvent, this);
  }

  /**
   * Stop following events.
   */
  dispose(): void {
    this.app.serviceManager.events.stream.disconnect(this._onEvent, this);
  }

  /**
   * The event of this kind an emission carries; `null` for any other emission.
   */
  protected abstract parse(emission: Event.Emission): T | null;

  /**
   * Apply one event to one open notebook.
   */
  protected abstract follow(panel: NotebookPanel, event: T): Promise<void>;

  /**
   * What failed, for the console, when an event could not be applied.
   */
  protected abstract readonly failure: string;

  private _onEvent(_: unknown, emission: Event.Emission): void {
    const event = this.parse(emission);
    if (event === null) {
      return;
    }
    const followed: Promise<void>[] = [];
    for (const panel of this.panels()) {
      if (panel.context.path !== event.path || !panel.context.isReady) {
        continue;
      }
      // One chain per document: events apply in the order the server sent them.
      const previous = this._chains.get(panel) ?? Promise.resolve();
      const next = previous
        .then(() => this.follow(panel, event))
        .catch(reason => console.warn(`jupyter-xcsh: ${this.failure}`, reason));
      this._chains.set(panel, next);
      followed.push(next);
    }
    void Promise.all(followed).then(() => this.followed(event));
  }

  /**
   * Called once every notebook open on the event's path has followed it (at once when none
   * is open).
   */
  protected followed(event: T): void {
    void event;
  }

  private _chains = new WeakMap<NotebookPanel, Promise<void>>();
}

/**
 * The notebooks open in the lab, as the sync classes want them.
 */
export function openNotebooks(tracker: {
  forEach(callback: (panel: NotebookPanel) => void): void;
}): () => NotebookPanel[] {
  return () => {
    const found: NotebookPanel[] = [];
    tracker.forEach(panel => found.push(panel));
    return found;
  };
}
