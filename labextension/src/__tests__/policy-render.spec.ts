/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import type { IApprovalLogEntry } from '../policy/approvals';
import { ApprovalBody } from '../policy/prompter';
import {
  expiresLine,
  logLine,
  renderApproval,
  renderApprovalSection
} from '../policy/render';
import type { IApproval } from '../policy/types';
import { parseUnifiedDiff } from '../policy/unified';
import { UNTRANSLATED } from '../translation';

const trans = UNTRANSLATED;

function approval(fields: Partial<IApproval> = {}): IApproval {
  return {
    id: 'a1',
    agent: 'claude',
    tool: 'notebook',
    class: 'edit',
    summary: 'edit cell 2 (id c2) of analysis.ipynb',
    path: 'analysis.ipynb',
    cellIds: ['c2'],
    detail: {},
    askedAt: '2026-01-01T10:00:00Z',
    expiresAt: '2026-01-01T10:02:00Z',
    ...fields
  };
}

function entry(fields: Partial<IApprovalLogEntry>): IApprovalLogEntry {
  return {
    key: 'a1/asked',
    kind: 'asked',
    approval: approval(),
    decision: null,
    reason: null,
    time: Date.parse('2026-01-01T10:00:00Z'),
    ...fields
  };
}

describe('parseUnifiedDiff', () => {
  it('reads added, removed and kept lines numbered from the hunk', () => {
    const diff = [
      '--- a.ipynb cell c2',
      '+++ a.ipynb cell c2',
      '@@ -3,3 +3,3 @@',
      ' x = 1',
      '-y = 2',
      '+y = 3',
      ' z = 4',
      '\\ No newline at end of file',
      ''
    ].join('\n');
    expect(parseUnifiedDiff(diff)).toEqual([
      { op: 'same', text: 'x = 1', oldLine: 3, newLine: 3 },
      { op: 'remove', text: 'y = 2', oldLine: 4, newLine: null },
      { op: 'add', text: 'y = 3', oldLine: null, newLine: 4 },
      { op: 'same', text: 'z = 4', oldLine: 5, newLine: 5 }
    ]);
  });

  it('keeps a "---" line inside a hunk as a removed line', () => {
    expect(parseUnifiedDiff('@@ -1 +1 @@\n--- old\n+++ new')).toEqual([
      { op: 'remove', text: '-- old', oldLine: 1, newLine: null },
      { op: 'add', text: '++ new', oldLine: null, newLine: 1 }
    ]);
  });
});

describe('renderApproval', () => {
  it('names the agent, the action and the notebook, and shows the diff', () => {
    const node = renderApproval(
      approval({ detail: { diff: '@@ -1 +1 @@\n-a = 1\n+a = 2\n' } }),
      trans
    );
    expect(node.textContent).toContain('claude asks for your approval');
    expect(node.querySelector('[data-fact="Action"]')?.textContent).toBe(
      'edit cell 2 (id c2) of analysis.ipynb'
    );
    expect(node.querySelector('[data-fact="Notebook"]')?.textContent).toBe(
      'analysis.ipynb'
    );
    expect(node.querySelector('.jp-mod-removed')?.textContent).toContain(
      'a = 1'
    );
    expect(node.querySelector('.jp-mod-added')?.textContent).toContain('a = 2');
  });

  it('shows the code that would run and a file, as text only', () => {
    const node = renderApproval(
      approval({
        class: 'run',
        detail: { code: '<img src=x onerror=alert(1)>', file: 'data/out.csv' }
      }),
      trans
    );
    expect(node.querySelector('.jp-xcsh-Approval-code')?.textContent).toBe(
      '<img src=x onerror=alert(1)>'
    );
    expect(node.querySelector('img')).toBeNull();
    expect(node.querySelector('[data-fact="File"]')?.textContent).toBe(
      'data/out.csv'
    );
  });
});

describe('ApprovalBody', () => {
  it('counts down and gives the reason typed, cut to 500 characters', () => {
    let now = Date.parse('2026-01-01T10:00:00Z');
    const body = new ApprovalBody(approval(), now + 120000, trans, () => now);
    const expires = body.node.querySelector('.jp-xcsh-Approval-expires');
    expect(expires?.textContent).toBe('Expires in 2 min 0 s');
    now += 100500;
    body.tick();
    expect(expires?.textContent).toBe('Expires in 20 s');
    const reason = body.node.querySelector('textarea')!;
    reason.value = `  ${'r'.repeat(600)}  `;
    expect(body.getValue()).toBe('r'.repeat(500));
    body.dispose();
  });
});

describe('the approvals log', () => {
  it('says each kind of event in one line', () => {
    const what = 'edit cell 2 (id c2) of analysis.ipynb';
    expect(logLine(entry({}), trans)).toBe(`claude asked: ${what}`);
    expect(
      logLine(entry({ kind: 'answered', decision: 'allow-once' }), trans)
    ).toBe(`Allowed once: ${what}`);
    expect(
      logLine(entry({ kind: 'answered', decision: 'allow-notebook' }), trans)
    ).toBe(`Allowed for this notebook: ${what}`);
    expect(
      logLine(
        entry({ kind: 'answered', decision: 'deny', reason: 'not now' }),
        trans
      )
    ).toBe(`Denied: ${what} (not now)`);
    expect(logLine(entry({ kind: 'expired' }), trans)).toBe(
      `Not answered in time: ${what}`
    );
    expect(
      logLine(entry({ kind: 'refused', reason: 'policy_denied' }), trans)
    ).toBe(`Refused by a policy: ${what}`);
    expect(
      logLine(entry({ kind: 'refused', reason: 'approval_required' }), trans)
    ).toBe(`Refused, no lab could answer in time: ${what}`);
    expect(logLine(entry({ kind: 'refused', reason: 'other' }), trans)).toBe(
      `Refused: ${what} (other)`
    );
  });

  it('lists requests waiting with a button that opens them', () => {
    const opened: string[] = [];
    const node = renderApprovalSection(
      [{ approval: approval(), answering: false, error: null, deadline: null }],
      [entry({})],
      trans,
      id => opened.push(id)
    );
    node.querySelector<HTMLButtonElement>('button')!.click();
    expect(opened).toEqual(['a1']);
    expect(node.querySelector('summary')?.textContent).toBe('1 approval event');
  });

  it('says nothing of the time of a request without one', () => {
    expect(expiresLine(null, 0, trans)).toBeNull();
  });
});
