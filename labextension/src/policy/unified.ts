/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The lines of a unified diff as text (what an approval request shows of a change), read
 * into the review's diff lines so that the review's rendering shows them (pure).
 */

import type { IDiffLine } from '../review/diff';

/**
 * The most diff lines an approval request shows.
 */
export const MAX_APPROVAL_DIFF_LINES = 2000;

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/;

/**
 * Read a unified diff: `+` lines added, `-` removed, ` ` kept, numbered from the `@@` hunk
 * headers; the `---`/`+++` file headers and `\ No newline` notes are left out; anything else
 * is kept as context (a diff the server cut).
 */
export function parseUnifiedDiff(text: string): IDiffLine[] {
  const lines: IDiffLine[] = [];
  let oldLine = 1;
  let newLine = 1;
  let inHunk = false;
  for (const raw of text.split(/\r?\n/)) {
    if (lines.length >= MAX_APPROVAL_DIFF_LINES) {
      break;
    }
    const hunk = HUNK.exec(raw);
    if (hunk !== null) {
      oldLine = Number(hunk[1]);
      newLine = Number(hunk[2]);
      inHunk = true;
      continue;
    }
    if (
      (!inHunk && (raw.startsWith('---') || raw.startsWith('+++'))) ||
      raw.startsWith('\\')
    ) {
      continue;
    }
    if (raw.startsWith('+')) {
      lines.push({ op: 'add', text: raw.slice(1), oldLine: null, newLine });
      newLine++;
    } else if (raw.startsWith('-')) {
      lines.push({ op: 'remove', text: raw.slice(1), oldLine, newLine: null });
      oldLine++;
    } else {
      lines.push({
        op: 'same',
        text: raw.startsWith(' ') ? raw.slice(1) : raw,
        oldLine,
        newLine
      });
      oldLine++;
      newLine++;
    }
  }
  // A diff ending with its line break leaves one empty line at the end.
  const last = lines[lines.length - 1];
  if (last !== undefined && last.op === 'same' && last.text === '') {
    lines.pop();
  }
  return lines;
}
