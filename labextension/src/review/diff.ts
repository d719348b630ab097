/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * Line diffs of cell sources and summaries of output changes (pure: no DOM, no I/O).
 *
 * The diff is Myers' O(ND) algorithm ("An O(ND) Difference Algorithm and Its Variations",
 * 1986) over lines: the shortest edit script, i.e. the longest common subsequence of lines is
 * kept. Inputs past {@link MAX_DIFF_LINES} lines, or whose edit distance exceeds
 * {@link MAX_EDIT_DISTANCE}, are shown as everything removed then everything added, so that a
 * huge cell cannot freeze the page.
 */

/**
 * The most lines of one side a diff is computed for.
 */
export const MAX_DIFF_LINES = 5000;

/**
 * The largest edit distance searched for (past it, a plain replace is shown).
 */
export const MAX_EDIT_DISTANCE = 2000;

/**
 * One step of an edit script over two sequences.
 */
export type DiffOp = 'same' | 'add' | 'remove';

/**
 * One line of a unified diff.
 */
export interface IDiffLine {
  /** Unchanged, added (only after) or removed (only before). */
  op: DiffOp;
  /** The line's text, without its line break. */
  text: string;
  /** Its 1-based line number before (`null` for an added line). */
  oldLine: number | null;
  /** Its 1-based line number after (`null` for a removed line). */
  newLine: number | null;
}

/**
 * One row of a side-by-side diff: the line before on the left, after on the right.
 */
export interface ISideBySideRow {
  left: IDiffLine | null;
  right: IDiffLine | null;
}

/**
 * The shortest edit script that turns `a` into `b` (Myers), as one op per kept, removed or
 * added item, in order (removals of a hunk before its additions).
 */
export function diffSequence(
  a: readonly string[],
  b: readonly string[]
): DiffOp[] {
  // Common head and tail cost nothing and shrink the search.
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) {
    head++;
  }
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  ) {
    tail++;
  }
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  const middle =
    midA.length > MAX_DIFF_LINES || midB.length > MAX_DIFF_LINES
      ? replaceAll(midA.length, midB.length)
      : (myers(midA, midB) ?? replaceAll(midA.length, midB.length));
  return [
    ...new Array<DiffOp>(head).fill('same'),
    ...middle,
    ...new Array<DiffOp>(tail).fill('same')
  ];
}

/**
 * Everything removed, then everything added.
 */
function replaceAll(n: number, m: number): DiffOp[] {
  return [
    ...new Array<DiffOp>(n).fill('remove'),
    ...new Array<DiffOp>(m).fill('add')
  ];
}

/**
 * Myers' greedy forward search with the trace kept for the backtrack; `null` past
 * {@link MAX_EDIT_DISTANCE}.
 */
function myers(a: readonly string[], b: readonly string[]): DiffOp[] | null {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, MAX_EDIT_DISTANCE);
  const offset = max + 1;
  let v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v);
    v = v.slice();
    for (let k = -d; k <= d; k += 2) {
      let x: number;
      if (k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1])) {
        x = v[offset + k + 1]; // down: an addition
      } else {
        x = v[offset + k - 1] + 1; // right: a removal
      }
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        return backtrack(trace, offset, n, m, d);
      }
    }
  }
  return null;
}

/**
 * Walk the trace back from (n, m) to (0, 0), collecting the ops in reverse.
 */
function backtrack(
  trace: Int32Array[],
  offset: number,
  n: number,
  m: number,
  depth: number
): DiffOp[] {
  const ops: DiffOp[] = [];
  let x = n;
  let y = m;
  for (let d = depth; d > 0; d--) {
    const v = trace[d]; // the furthest reaching paths after step d - 1
    const k = x - y;
    const down = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]);
    const prevK = down ? k + 1 : k - 1;
    const prevX = v[offset + prevK];
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push('same');
      x--;
      y--;
    }
    ops.push(down ? 'add' : 'remove');
    x = prevX;
    y = prevY;
  }
  while (x > 0 && y > 0) {
    ops.push('same');
    x--;
    y--;
  }
  return ops.reverse();
}

/**
 * The lines of a source: split at line breaks (`\n`, `\r\n` or `\r`); an empty source has
 * none, and a final line break does not start another line.
 */
export function splitLines(source: string): string[] {
  if (source === '') {
    return [];
  }
  const lines = source.split(/\r\n|\r|\n/);
  if (lines.length > 1 && lines[lines.length - 1] === '') {
    lines.pop();
  }
  return lines;
}

/**
 * The unified line diff of two sources.
 */
export function diffLines(before: string, after: string): IDiffLine[] {
  const a = splitLines(before);
  const b = splitLines(after);
  const lines: IDiffLine[] = [];
  let i = 0;
  let j = 0;
  for (const op of diffSequence(a, b)) {
    if (op === 'same') {
      lines.push({ op, text: a[i], oldLine: i + 1, newLine: j + 1 });
      i++;
      j++;
    } else if (op === 'remove') {
      lines.push({ op, text: a[i], oldLine: i + 1, newLine: null });
      i++;
    } else {
      lines.push({ op, text: b[j], oldLine: null, newLine: j + 1 });
      j++;
    }
  }
  return lines;
}

/**
 * How many lines a diff adds and removes.
 */
export function diffStats(lines: readonly IDiffLine[]): {
  added: number;
  removed: number;
} {
  let added = 0;
  let removed = 0;
  for (const line of lines) {
    if (line.op === 'add') {
      added++;
    } else if (line.op === 'remove') {
      removed++;
    }
  }
  return { added, removed };
}

/**
 * The rows of a side-by-side view of a unified diff: unchanged lines on both sides, and in
 * each hunk the removed lines paired with the added ones, in order.
 */
export function sideBySide(lines: readonly IDiffLine[]): ISideBySideRow[] {
  const rows: ISideBySideRow[] = [];
  let removed: IDiffLine[] = [];
  let added: IDiffLine[] = [];
  const flush = () => {
    for (let k = 0; k < Math.max(removed.length, added.length); k++) {
      rows.push({ left: removed[k] ?? null, right: added[k] ?? null });
    }
    removed = [];
    added = [];
  };
  for (const line of lines) {
    if (line.op === 'same') {
      flush();
      rows.push({ left: line, right: line });
    } else if (line.op === 'remove') {
      removed.push(line);
    } else {
      added.push(line);
    }
  }
  flush();
  return rows;
}

/**
 * How the outputs of a cell changed: outputs only after (added), only before (removed), and
 * replaced in place (changed, a removal paired with an addition).
 */
export interface IOutputSummary {
  added: number;
  removed: number;
  changed: number;
  /** The outputs before and after, counted. */
  before: number;
  after: number;
}

/**
 * Compare two lists of nbformat outputs (compared as JSON, ignoring `execution_count`).
 */
export function summarizeOutputs(
  before: readonly unknown[],
  after: readonly unknown[]
): IOutputSummary {
  const key = (output: unknown): string => {
    if (typeof output === 'object' && output !== null) {
      const { execution_count: _, ...rest } = output as Record<string, unknown>;
      void _;
      return stableJson(rest);
    }
    return stableJson(output);
  };
  const ops = diffSequence(before.map(key), after.map(key));
  const summary: IOutputSummary = {
    added: 0,
    removed: 0,
    changed: 0,
    before: before.length,
    after: after.length
  };
  let adds = 0;
  let removes = 0;
  const flush = () => {
    const paired = Math.min(adds, removes);
    summary.changed += paired;
    summary.added += adds - paired;
    summary.removed += removes - paired;
    adds = 0;
    removes = 0;
  };
  for (const op of ops) {
    if (op === 'same') {
      flush();
    } else if (op === 'add') {
      adds++;
    } else {
      removes++;
    }
  }
  flush();
  return summary;
}

/**
 * JSON with object keys sorted, so that equal values compare equal.
 */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) {
    return `[${value.map(stableJson).join(',')}]`;
  }
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    return `{${Object.keys(record)
      .sort()
      .map(k => `${JSON.stringify(k)}:${stableJson(record[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
