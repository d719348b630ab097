/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The server side of the review: review states kept in the activity history
 * (`POST /api/xcsh/activity/review`), and the calls to review read back from it.
 */

import type { ServerConnection } from '@jupyterlab/services';

import { requestAPI } from '../request';
import type { IXcshClient } from '../tokens';
import type { ReviewStore } from './controller';
import type { IStoredReview, ReviewModel } from './model';

/**
 * The most calls read back from the history.
 */
const MAX_PAGE = 1000;

/**
 * Keep a review state in the server's activity history; a history turned off (404) or a
 * failure only means the state will not outlast the page.
 */
export function serverStore(settings: ServerConnection.ISettings): ReviewStore {
  return async review => {
    try {
      await requestAPI(
        'activity/review',
        {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify(review)
        },
        settings
      );
    } catch (error) {
      const status = (error as { response?: Response }).response?.status;
      if (status !== 404) {
        console.warn('jupyter-xcsh: could not keep a review state', error);
      }
    }
  };
}

/**
 * The review states of an activity history entry (`review`), checked.
 */
export function storedReviews(entry: unknown): IStoredReview[] {
  const review = (entry as { review?: unknown } | null)?.review;
  if (!Array.isArray(review)) {
    return [];
  }
  const stored: IStoredReview[] = [];
  for (const item of review) {
    const { cellId, state } = (item ?? {}) as Record<string, unknown>;
    if (
      (state === 'kept' || state === 'undone' || state === 'yours') &&
      (cellId === null || cellId === undefined || typeof cellId === 'string')
    ) {
      stored.push({ cellId: cellId ?? null, state });
    }
  }
  return stored;
}

/**
 * Put the notebook calls the server's history kept back into the review, with their kept
 * states (changes kept or undone before stay so).
 *
 * @returns How many history entries were read.
 */
export async function loadReviewHistory(
  model: ReviewModel,
  client: Pick<IXcshClient, 'activityHistory'>
): Promise<number> {
  try {
    const page = await client.activityHistory({ limit: MAX_PAGE });
    for (const entry of page.entries) {
      if (entry.kind === 'notebook') {
        model.restore(entry.events, storedReviews(entry));
      }
    }
    return page.entries.length;
  } catch (error) {
    const status = (error as { response?: Response }).response?.status;
    if (status !== 404) {
      console.warn('jupyter-xcsh: could not load the review history', error);
    }
    return 0;
  }
}
