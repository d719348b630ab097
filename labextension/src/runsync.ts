/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The outputs of an agent's run in place appear in notebooks open in the lab.
 *
 * While no collaboration room shares the notebook, the server writes a cell's outputs into the
 * file only once the cell ends; while it runs, its outputs arrive as `outputs` events (at most
 * every 100 ms). Each event sets the outputs and execution count of the cell with that id in
 * the open notebook, as the lab does for the cells it runs itself:
 *
 * - nothing is reloaded, so the person's typing in other cells and their cursor survive;
 * - a notebook with no unsaved changes stays clean (the server writes the same outputs into
 *   the file), so no "unsaved" mark and no autosave follow from the agent's run;
 * - the final event of a cell carries the file's new modification time, which the document
 *   takes as known, so the person's next save is not taken for a conflict ("File Changed");
 * - outputs too large for an event are read from the saved file;
 * - while a cell of the run runs its prompt shows `[*]`, as for the cells the lab runs itself
 *   (the run's `started` event names its cells by id, its `cell` events say which one runs),
 *   and the cell says "Agent running" in the agent's colour, so a person tells the agent's run
 *   from their own.
 *
 * A collaborative document (jupyter-collaboration) is left alone: the server writes the run's
 * outputs into the shared document itself, which every open lab tab follows.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import type { NotebookPanel } from '@jupyterlab/notebook';
import type { Event } from '@jupyterlab/services';
import type { TranslationBundle } from '@jupyterlab/translation';

import { acknowledgeSave } from './livesync';
import { NotebookEventSync } from './notebooksync';
import type { RunEventV1 } from './events.generated';
import { RUN_SCHEMA_ID, type Parsed } from './core/events';
import { UNTRANSLATED } from './translation';

/**
 * The class of a cell an agent's run in place is running (without a collaboration room; in a
 * room the agent's cursor says it).
 */
export const AGENT_RUNNING_CLASS = 'jp-xcsh-mod-agentRunning';

/**
 * An nbformat output, as the server sends it (JSON).
 */
export type Output = { output_type: string } & Record<string, unknown>;

/**
 * A cell's outputs reported by a run in place (the `outputs` event of the run schema).
 */
export interface IRunOutputsEvent extends Pick<
  Parsed<RunEventV1>,
  'cellId' | 'executionCount' | 'lastModified'
> {
  path: string;
  cellIndex: number;
  /**
   * The outputs; null when they were too large for an event.
   */
  outputs: Output[] | null;
  /**
   * Whether these outputs were written into the file (the cell ended).
   */
  final: boolean;
}

/**
 * Cells of a run starting or ending to run (the prompt shows `[*]` while one runs).
 */
export interface IRunStateEvent {
  path: string;
  /** The cells' ids (a run's cells before nbformat 4.5 have none, and are not followed). */
  cellIds: string[];
  running: boolean;
}

/**
 * What a run tells an open notebook: a cell's outputs, or which cells run.
 */
export type RunSyncEvent = IRunOutputsEvent | IRunStateEvent;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Read an `outputs` event out of a raw event emission; `null` for anything else.
 */
export function parseRunOutputs(raw: unknown): IRunOutputsEvent | null {
  if (
    !isRecord(raw) ||
    raw.schema_id !== RUN_SCHEMA_ID ||
    raw.event !== 'outputs' ||
    typeof raw.path !== 'string' ||
    typeof raw.cellIndex !== 'number' ||
    !Number.isSafeInteger(raw.cellIndex) ||
    raw.cellIndex < 0
  ) {
    return null;
  }
  const outputs = Array.isArray(raw.outputs)
    ? (raw.outputs.filter(
        output => isRecord(output) && typeof output.output_type === 'string'
      ) as Output[])
    : null;
  const count = raw.executionCount;
  return {
    path: raw.path,
    cellId: typeof raw.cellId === 'string' ? raw.cellId : null,
    cellIndex: raw.cellIndex,
    executionCount:
      typeof count === 'number' && Number.isSafeInteger(count) ? count : null,
    outputs,
    final: raw.final === true,
    lastModified: typeof raw.lastModified === 'string' ? raw.lastModified : null
  };
}

/**
 * Follows which cells of the runs in place run, from their events.
 *
 * The run's events number its cells by position; its `started` event gives each one's id.
 */
export class RunCellTracker {
  /**
   * Read a run's `started`, `cell` or `finished` emission; `null` for any other, or when it
   * changes no cell's state.
   */
  parse(raw: unknown): IRunStateEvent | null {
    if (
      !isRecord(raw) ||
      raw.schema_id !== RUN_SCHEMA_ID ||
      typeof raw.callId !== 'string' ||
      typeof raw.path !== 'string'
    ) {
      return null;
    }
    const { callId, path } = raw;
    switch (raw.event) {
      case 'started': {
        const cells = Array.isArray(raw.cells) ? raw.cells : [];
        this._cells.set(
          callId,
          cells.map(c =>
            isRecord(c) && typeof c.cellId === 'string' ? c.cellId : null
          )
        );
        // Bounded: a run whose end was missed is forgotten after as many others.
        if (this._cells.size > RunCellTracker.MAX_RUNS) {
          this._cells.delete(this._cells.keys().next().value as string);
        }
        return null;
      }
      case 'cell': {
        const at = raw.cellIndex;
        const id =
          typeof at === 'number' ? this._cells.get(callId)?.[at] : null;
        return typeof id === 'string'
          ? { path, cellIds: [id], running: raw.status === 'running' }
          : null;
      }
      case 'finished': {
        const ids = this._cells.get(callId) ?? [];
        this._cells.delete(callId);
        const cellIds = ids.filter((id): id is string => id !== null);
        return cellIds.length > 0 ? { path, cellIds, running: false } : null;
      }
    }
    return null;
  }

  private _cells = new Map<string, (string | null)[]>();
}

/**
 * The namespace for {@link RunCellTracker} statics.
 */
export namespace RunCellTracker {
  /**
   * The most runs followed at once.
   */
  export const MAX_RUNS = 100;
}

/**
 * What a run needs of a notebook's cell models (a code cell's outputs, count and state).
 */
interface IRunCellModel {
  readonly id: string;
  readonly type: string;
  outputs?: { fromJSON(values: Output[]): void };
  executionCount?: number | null;
  executionState?: 'idle' | 'running';
}

/**
 * The cells of a notebook model (`NotebookModel.cells`).
 */
export interface IRunCells {
  readonly length: number;
  get(index: number): unknown;
}

/**
 * The position of the event's code cell in a notebook; -1 when it is not there.
 */
export function findRunCell(
  cells: IRunCells,
  event: Pick<IRunOutputsEvent, 'cellId' | 'cellIndex'>
): number {
  let at = -1;
  if (event.cellId === null) {
    at = event.cellIndex < cells.length ? event.cellIndex : -1;
  } else {
    for (let i = 0; i < cells.length; i++) {
      if ((cells.get(i) as IRunCellModel).id === event.cellId) {
        at = i;
        break;
      }
    }
  }
  return at >= 0 && (cells.get(at) as IRunCellModel).type === 'code' ? at : -1;
}

/**
 * Give the event's cell its outputs, and its execution count once it ended; `false` when the
 * cell is not there.
 *
 * Through the cell's own output model, as the lab does for the cells it runs (which keeps
 * the shared document and the rendered outputs in step).
 */
export function applyRunOutputs(
  cells: IRunCells,
  event: IRunOutputsEvent,
  outputs: Output[]
): boolean {
  const at = findRunCell(cells, event);
  if (at < 0) {
    return false;
  }
  const cell = cells.get(at) as IRunCellModel;
  cell.outputs?.fromJSON(outputs);
  if (event.final) {
    // As for the cells the lab runs: the count shows once the cell ended (`[*]` until then).
    cell.executionCount = event.executionCount;
  }
  return true;
}

/**
 * Show whether the event's cells run (`[*]` in their prompt); `false` when none changed.
 */
export function applyRunState(
  cells: IRunCells,
  event: IRunStateEvent
): boolean {
  let changed = false;
  for (const cellId of event.cellIds) {
    const at = findRunCell(cells, { cellId, cellIndex: -1 });
    const cell = at < 0 ? null : (cells.get(at) as IRunCellModel);
    // Only a cell this run marked running is set idle (not one the person runs).
    if (cell !== null && (event.running || cell.executionState === 'running')) {
      changed ||= cell.executionState !== (event.running ? 'running' : 'idle');
      cell.executionState = event.running ? 'running' : 'idle';
    }
  }
  return changed;
}

/**
 * Label the event's cells as run by an agent while they run (and no longer once they end).
 */
export function showAgentRunning(
  panel: Pick<NotebookPanel, 'content'>,
  event: IRunStateEvent,
  trans: TranslationBundle = UNTRANSLATED
): void {
  const ids = new Set(event.cellIds);
  for (const cell of panel.content.widgets) {
    if (!ids.has(cell.model.id)) {
      continue;
    }
    cell.toggleClass(AGENT_RUNNING_CLASS, event.running);
    if (event.running) {
      cell.node.dataset.xcshAgentRunning = trans.__('Agent running');
    } else {
      delete cell.node.dataset.xcshAgentRunning;
    }
  }
}

/**
 * Make a change a run made, leaving a notebook with no unsaved changes clean: the file holds
 * (or will hold) the same outputs, and whether a cell runs is not saved at all.
 */
function keepClean(model: { dirty: boolean }, change: () => boolean): void {
  const wasDirty = model.dirty;
  if (change() && !wasDirty) {
    model.dirty = false;
  }
}

/**
 * Keeps open notebooks showing the outputs of agents' runs in place.
 */
export class RunSync extends NotebookEventSync<RunSyncEvent> {
  /**
   * Follow runs for the open notebooks `panels` gives; `trans` words the cells' labels.
   */
  constructor(
    app: JupyterFrontEnd,
    panels: () => Iterable<NotebookPanel>,
    private readonly _trans: TranslationBundle = UNTRANSLATED
  ) {
    super(app, panels);
  }

  protected parse(emission: Event.Emission): RunSyncEvent | null {
    return parseRunOutputs(emission) ?? this._tracker.parse(emission);
  }

  private _tracker = new RunCellTracker();

  protected readonly failure = 'could not show a run output';

  protected async follow(
    panel: NotebookPanel,
    event: RunSyncEvent
  ): Promise<void> {
    const { context } = panel;
    const model = context.model;
    if (context.isDisposed || !model || model.collaborative === true) {
      return;
    }
    if ('running' in event) {
      keepClean(model, () => applyRunState(model.cells, event));
      showAgentRunning(panel, event, this._trans);
      return;
    }
    let outputs = event.outputs;
    if (outputs === null) {
      if (!event.final) {
        return; // too large to preview: shown when the cell ends
      }
      outputs = await this._savedOutputs(context.path, event);
      if (outputs === null || context.isDisposed) {
        return;
      }
    }
    const shown = outputs;
    keepClean(model, () => {
      if (!applyRunOutputs(model.cells, event, shown)) {
        return false;
      }
      if (event.final && event.lastModified !== null) {
        // Without a hash the document compares times; its next own save brings the hash back.
        acknowledgeSave(context, {
          last_modified: event.lastModified,
          hash: undefined
        });
      }
      return true;
    });
  }

  /**
   * The cell's outputs as saved in the file (the event's copy was left out).
   */
  private async _savedOutputs(
    path: string,
    event: IRunOutputsEvent
  ): Promise<Output[] | null> {
    const saved = await this.app.serviceManager.contents.get(path, {
      content: true,
      type: 'notebook'
    });
    const cells = (saved.content?.cells ?? []) as Array<
      Record<string, unknown>
    >;
    const cell =
      event.cellId !== null
        ? cells.find(c => c.id === event.cellId)
        : cells[event.cellIndex];
    return cell?.cell_type === 'code' && Array.isArray(cell.outputs)
      ? (cell.outputs as Output[])
      : null;
  }
}
