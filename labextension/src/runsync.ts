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
 * - outputs too large for an event are read from the saved file.
 *
 * A collaborative document (jupyter-collaboration) is left alone: the server writes the run's
 * outputs into the shared document itself, which every open lab tab follows.
 */

import type { NotebookPanel } from '@jupyterlab/notebook';
import type { Contents, Event } from '@jupyterlab/services';

import { acknowledgeSave } from './livesync';
import { NotebookEventSync } from './notebooksync';
import { RUN_SCHEMA_ID } from './panel/events';

/**
 * An nbformat output, as the server sends it (JSON).
 */
export type Output = { output_type: string } & Record<string, unknown>;

/**
 * A cell's outputs reported by a run in place.
 */
export interface IRunOutputsEvent {
  path: string;
  /**
   * The cell's id; null in notebooks before nbformat 4.5 (then `cellIndex`).
   */
  cellId: string | null;
  cellIndex: number;
  executionCount: number | null;
  /**
   * The outputs; null when they were too large for an event.
   */
  outputs: Output[] | null;
  /**
   * Whether these outputs were written into the file (the cell ended).
   */
  final: boolean;
  /**
   * The file's modification time after the write (final events).
   */
  lastModified: string | null;
}

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
 * What a run needs of a notebook's cell models (a code cell's outputs and count).
 */
interface IRunCellModel {
  readonly id: string;
  readonly type: string;
  outputs?: { fromJSON(values: Output[]): void };
  executionCount?: number | null;
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
 * Give the event's cell its outputs and execution count; `false` when the cell is not there.
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
  cell.executionCount = event.executionCount;
  return true;
}

/**
 * Keeps open notebooks showing the outputs of agents' runs in place.
 */
export class RunSync extends NotebookEventSync<IRunOutputsEvent> {
  protected parse(emission: Event.Emission): IRunOutputsEvent | null {
    return parseRunOutputs(emission);
  }

  protected readonly failure = 'could not show a run output';

  protected async follow(
    panel: NotebookPanel,
    event: IRunOutputsEvent
  ): Promise<void> {
    const { context } = panel;
    const model = context.model;
    if (context.isDisposed || !model || model.collaborative === true) {
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
    const wasDirty = model.dirty;
    if (!applyRunOutputs(model.cells, event, outputs)) {
      return;
    }
    if (event.final && event.lastModified !== null) {
      // Without a hash the document compares times; its next own save brings the hash back.
      const saved: Partial<Contents.IModel> = {
        last_modified: event.lastModified,
        hash: undefined
      };
      acknowledgeSave(context, saved);
    }
    if (!wasDirty) {
      // The file holds (or will hold) exactly these outputs: nothing for the person to save.
      model.dirty = false;
    }
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
