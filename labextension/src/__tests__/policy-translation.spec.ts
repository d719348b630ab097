/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';

import { accessButtonLabel, accessButtonTitle } from '../policy/access';
import { AskBeforeRunLabel } from '../policy/celltag';
import { parsePolicy } from '../policy/parse';
import {
  limitsLine,
  presetCaption,
  presetLabel,
  PRESETS
} from '../policy/presets';
import { ApprovalBody } from '../policy/prompter';
import { logLine, renderApprovalSection } from '../policy/render';
import type { IApproval } from '../policy/types';

/** A bundle that wraps every string in « »: a text without them did not go through it. */
const marking: TranslationBundle = (() => {
  const base = nullTranslator.load('jupyter_xcsh');
  const mark = (text: string) => `«${text}»`;
  return {
    ...base,
    __: (msgid: string, ...args: any[]) => mark(base.__(msgid, ...args)),
    _n: (msgid: string, plural: string, n: number, ...args: any[]) =>
      mark(base._n(msgid, plural, n, ...args))
  } as TranslationBundle;
})();

const translated = (text: string | null | undefined) =>
  /^«[^]*»$/.test((text ?? '').trim());

const approval: IApproval = {
  id: 'a1',
  agent: 'claude',
  tool: 'notebook',
  class: 'run',
  summary: 'run cell 1 of a.ipynb',
  path: 'a.ipynb',
  cellIds: ['c1'],
  detail: { code: 'train()' },
  askedAt: '2026-01-01T10:00:00Z',
  expiresAt: '2026-01-01T10:02:00Z'
};

describe('the translation of agent access and approvals', () => {
  it('puts the approval dialog through the translator', () => {
    const body = new ApprovalBody(approval, Date.now() + 60000, marking);
    const node = body.node;
    for (const selector of [
      '.jp-xcsh-Approval-lead',
      '.jp-xcsh-Approval-heading',
      '.jp-xcsh-Approval-expires'
    ]) {
      expect(translated(node.querySelector(selector)?.textContent)).toBe(true);
    }
    for (const term of node.querySelectorAll('dt')) {
      expect(translated(term.textContent)).toBe(true);
    }
    expect(
      translated(node.querySelector('textarea')?.getAttribute('placeholder'))
    ).toBe(true);
    body.dispose();
  });

  it('puts the activity section, the log and the tag label through the translator', () => {
    const section = renderApprovalSection(
      [{ approval, answering: false, error: null, deadline: null }],
      [],
      marking,
      () => undefined
    );
    expect(translated(section.querySelector('button')?.textContent)).toBe(true);
    expect(
      translated(
        section.querySelector('.jp-xcsh-ApprovalLog-text')?.textContent
      )
    ).toBe(true);
    for (const kind of ['asked', 'answered', 'expired', 'refused'] as const) {
      const line = logLine(
        {
          key: `a1/${kind}`,
          kind,
          approval,
          decision: 'deny',
          reason: null,
          time: 0
        },
        marking
      );
      expect(translated(line)).toBe(true);
    }
    const label = new AskBeforeRunLabel(marking);
    expect(translated(label.node.textContent)).toBe(true);
    expect(translated(label.node.title)).toBe(true);
  });

  it('puts the Agent access labels through the translator', () => {
    for (const preset of PRESETS) {
      expect(translated(presetLabel(preset, marking))).toBe(true);
      expect(translated(presetCaption(preset, marking))).toBe(true);
    }
    expect(translated(limitsLine({ run: 'ask' }, marking))).toBe(true);
    const policy = parsePolicy({ path: 'a.ipynb', preset: 'full', rules: [] });
    expect(translated(accessButtonLabel(policy, marking))).toBe(true);
    expect(
      translated(
        accessButtonTitle(policy, 'a.ipynb', 'notebook', null, marking)
      )
    ).toBe(true);
  });
});
