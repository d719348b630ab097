/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  diffLines,
  diffSequence,
  diffStats,
  sideBySide,
  splitLines,
  summarizeOutputs,
  type DiffOp
} from '../review/diff';

/** Apply an edit script to `a`, taking additions from `b`: must give `b`. */
function apply(ops: DiffOp[], a: string[], b: string[]): string[] {
  const out: string[] = [];
  let i = 0;
  let j = 0;
  for (const op of ops) {
    if (op === 'same') {
      expect(a[i]).toBe(b[j]);
      out.push(a[i]);
      i++;
      j++;
    } else if (op === 'remove') {
      i++;
    } else {
      out.push(b[j]);
      j++;
    }
  }
  expect(i).toBe(a.length);
  return out;
}

/** The length of a longest common subsequence (dynamic programming). */
function lcs(a: string[], b: string[]): number {
  const t = Array.from({ length: a.length + 1 }, () =>
    new Array<number>(b.length + 1).fill(0)
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      t[i][j] =
        a[i - 1] === b[j - 1]
          ? t[i - 1][j - 1] + 1
          : Math.max(t[i - 1][j], t[i][j - 1]);
    }
  }
  return t[a.length][b.length];
}

describe('diffSequence', () => {
  it('handles empty sides', () => {
    expect(diffSequence([], [])).toEqual([]);
    expect(diffSequence(['a'], [])).toEqual(['remove']);
    expect(diffSequence([], ['a', 'b'])).toEqual(['add', 'add']);
  });

  it('finds the shortest edit script (Myers example)', () => {
    const a = 'ABCABBA'.split('');
    const b = 'CBABAC'.split('');
    const ops = diffSequence(a, b);
    expect(apply(ops, a, b)).toEqual(b);
    expect(ops.filter(op => op !== 'same')).toHaveLength(5);
    expect(ops.filter(op => op === 'same')).toHaveLength(4);
  });

  it('keeps a longest common subsequence on random inputs', () => {
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let round = 0; round < 200; round++) {
      const a = Array.from({ length: Math.floor(random() * 12) }, () =>
        'abc'.charAt(Math.floor(random() * 3))
      );
      const b = Array.from({ length: Math.floor(random() * 12) }, () =>
        'abc'.charAt(Math.floor(random() * 3))
      );
      const ops = diffSequence(a, b);
      expect(apply(ops, a, b)).toEqual(b);
      expect(ops.filter(op => op === 'same')).toHaveLength(lcs(a, b));
    }
  });

  it('falls back to a replace for huge inputs', () => {
    const a = Array.from({ length: 6000 }, (_, k) => `a${k}`);
    const b = Array.from({ length: 6000 }, (_, k) => `b${k}`);
    const ops = diffSequence(a, b);
    expect(apply(ops, a, b)).toEqual(b);
  });
});

describe('diffLines', () => {
  it('numbers the lines of both sides', () => {
    const lines = diffLines(
      'a = 1\nb = 2\nc = 3',
      'a = 1\nb = 20\nc = 3\nd = 4'
    );
    expect(lines).toEqual([
      { op: 'same', text: 'a = 1', oldLine: 1, newLine: 1 },
      { op: 'remove', text: 'b = 2', oldLine: 2, newLine: null },
      { op: 'add', text: 'b = 20', oldLine: null, newLine: 2 },
      { op: 'same', text: 'c = 3', oldLine: 3, newLine: 3 },
      { op: 'add', text: 'd = 4', oldLine: null, newLine: 4 }
    ]);
    expect(diffStats(lines)).toEqual({ added: 2, removed: 1 });
  });

  it('splits sources into lines', () => {
    expect(splitLines('')).toEqual([]);
    expect(splitLines('x\n')).toEqual(['x']);
    expect(splitLines('x\r\ny\rz')).toEqual(['x', 'y', 'z']);
    expect(splitLines('\n')).toEqual(['']);
  });

  it('shows a new cell as all added and a removed one as all removed', () => {
    expect(diffLines('', 'x\ny').map(l => l.op)).toEqual(['add', 'add']);
    expect(diffLines('x', '').map(l => l.op)).toEqual(['remove']);
  });
});

describe('sideBySide', () => {
  it('pairs removed and added lines of a hunk', () => {
    const rows = sideBySide(diffLines('a\nb\nc\nd', 'a\nB\nd\ne'));
    expect(
      rows.map(r => [r.left?.text ?? null, r.right?.text ?? null])
    ).toEqual([
      ['a', 'a'],
      ['b', 'B'],
      ['c', null],
      ['d', 'd'],
      [null, 'e']
    ]);
  });
});

describe('summarizeOutputs', () => {
  const stream = (text: string) => ({
    output_type: 'stream',
    name: 'stdout',
    text
  });

  it('counts added, removed and changed outputs', () => {
    expect(summarizeOutputs([], [stream('1')])).toMatchObject({
      added: 1,
      removed: 0,
      changed: 0
    });
    expect(
      summarizeOutputs([stream('1'), stream('2')], [stream('1')])
    ).toMatchObject({ added: 0, removed: 1, changed: 0 });
    expect(
      summarizeOutputs(
        [stream('1'), { output_type: 'execute_result', execution_count: 1 }],
        [stream('one'), { execution_count: 2, output_type: 'execute_result' }]
      )
    ).toMatchObject({ added: 0, removed: 0, changed: 1, before: 2, after: 2 });
  });
});
