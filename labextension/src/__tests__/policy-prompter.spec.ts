/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { ApprovalQueue } from '../policy/approvals';
import { APPROVAL_SCHEMA_ID } from '../policy/parse';
import { ApprovalPrompter } from '../policy/prompter';
import type { ApprovalDecision, IApproval } from '../policy/types';
import { UNTRANSLATED } from '../translation';
import { waitFor } from './helpers';

function approval(id: string): IApproval {
  return {
    id,
    agent: 'claude',
    tool: 'notebook',
    class: 'run',
    summary: `run cell 1 of a.ipynb (${id})`,
    path: 'a.ipynb',
    cellIds: ['c1'],
    detail: { code: 'train()' },
    askedAt: new Date().toISOString(),
    expiresAt: new Date(Date.now() + 120000).toISOString()
  };
}

function emission(kind: string, id: string) {
  return { schema_id: APPROVAL_SCHEMA_ID, kind, approval: approval(id) };
}

const answers: [string, ApprovalDecision, string | undefined][] = [];
const api = {
  answerApproval: async (
    id: string,
    decision: ApprovalDecision,
    reason?: string
  ) => {
    answers.push([id, decision, reason]);
    return null;
  },
  listApprovals: async () => []
};

function dialog(): HTMLElement | null {
  return document.querySelector('.jp-Dialog.jp-xcsh-ApprovalDialog');
}

function button(label: string): HTMLButtonElement {
  const found = [
    ...document.querySelectorAll<HTMLButtonElement>('.jp-Dialog button')
  ].find(b => b.textContent === label);
  if (found === undefined) {
    throw new Error(`no button ${label}`);
  }
  return found;
}

describe('ApprovalPrompter', () => {
  let queue: ApprovalQueue;
  let prompter: ApprovalPrompter;

  beforeEach(() => {
    answers.length = 0;
    queue = new ApprovalQueue(api);
    prompter = new ApprovalPrompter(queue, UNTRANSLATED);
    prompter.start();
  });

  afterEach(async () => {
    prompter.dispose();
    await waitFor(() => dialog() === null, 'no dialog');
  });

  it('shows a request at once and sends the answer of its button', async () => {
    queue.handleEmission(emission('asked', 'a1'));
    await waitFor(dialog, 'the dialog');
    expect(dialog()?.textContent).toContain('claude asks for your approval');
    expect(dialog()?.textContent).toContain('train()');
    button('Allow once').click();
    await waitFor(() => answers.length > 0, 'the answer');
    expect(answers).toEqual([['a1', 'allow-once', undefined]]);
    await waitFor(() => dialog() === null, 'the dialog closed');
  });

  it("sends a deny with the person's reason", async () => {
    queue.handleEmission(emission('asked', 'a1'));
    await waitFor(dialog, 'the dialog');
    dialog()!.querySelector('textarea')!.value = 'too expensive';
    button('Deny').click();
    await waitFor(() => answers.length > 0, 'the answer');
    expect(answers).toEqual([['a1', 'deny', 'too expensive']]);
  });

  it('closes when another lab answers, then shows the next request', async () => {
    queue.handleEmission(emission('asked', 'a1'));
    queue.handleEmission(emission('asked', 'a2'));
    await waitFor(dialog, 'the dialog');
    expect(dialog()?.textContent).toContain('(a1)');
    queue.handleEmission(emission('answered', 'a1'));
    await waitFor(
      () => dialog()?.textContent?.includes('(a2)'),
      'the next request'
    );
    expect(answers).toEqual([]);
  });

  it('never allows on Enter, even typed in the reason box', async () => {
    queue.handleEmission(emission('asked', 'a1'));
    await waitFor(dialog, 'the dialog');
    const reason = dialog()!.querySelector('textarea')!;
    reason.focus();
    reason.dispatchEvent(
      new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })
    );
    dialog()!.dispatchEvent(
      new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })
    );
    await new Promise(resolve => setTimeout(resolve, 50));
    expect(answers).toEqual([]);
    expect(queue.pending).toHaveLength(1);
  });

  it('puts a request off with Later, and shows it again when asked to', async () => {
    queue.handleEmission(emission('asked', 'a1'));
    await waitFor(dialog, 'the dialog');
    button('Later').click();
    await waitFor(() => dialog() === null, 'the dialog closed');
    expect(queue.pending).toHaveLength(1);
    prompter.open('a1');
    await waitFor(dialog, 'the dialog again');
  });
});
