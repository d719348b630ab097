/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The activity panel's past: the calls the server's activity history kept
 * (`GET /api/xcsh/activity`, docs/developers/contract.md §13), loaded at start.
 */

import type { ICellMarks, IXcshClient } from '../tokens';
import type { ActivityModel } from '../core/activity';

/**
 * The most calls one page of the history holds.
 */
const MAX_PAGE = 1000;

/**
 * Add the calls the server's activity history kept to the model (after a page
 * reload or a server restart), and their cell marks to `marks`; a history
 * turned off (404) or unreachable leaves the panel as it is.
 *
 * @returns How many calls were added to the model.
 */
export async function loadHistory(
  model: ActivityModel,
  client: Pick<IXcshClient, 'activityHistory'>,
  marks: Pick<ICellMarks, 'restore' | 'removeCell'> | null = null
): Promise<number> {
  try {
    const page = await client.activityHistory({
      limit: Math.min(model.maxCalls, MAX_PAGE)
    });
    if (marks !== null) {
      for (const entry of page.entries) {
        // A change the person kept or undid in review has no mark any more.
        const review = entry.review ?? [];
        if (review.some(r => r.cellId === null)) {
          continue;
        }
        for (const emission of entry.events) {
          marks.restore(emission);
        }
        for (const { cellId } of review) {
          if (cellId !== null && entry.path !== null) {
            marks.removeCell?.(entry.path, cellId, entry.callId);
          }
        }
      }
    }
    // The person's own undos (made in the lab before the reload) are listed as theirs.
    for (const entry of page.entries) {
      if ((entry?.review ?? []).some(r => r?.state === 'yours')) {
        model.linkUndo(entry.callId, '');
      }
    }
    return model.loadHistory(page.entries);
  } catch (error) {
    const status = (error as { response?: Response }).response?.status;
    if (status !== 404) {
      console.warn('jupyter-xcsh: could not load the activity history', error);
    }
    return 0;
  }
}
