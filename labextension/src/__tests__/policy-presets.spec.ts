/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { parsePolicy } from '../policy/parse';
import {
  chosenPreset,
  heldByOperator,
  limitsLine,
  operatorLimits,
  PRESET_CLASSES,
  PRESETS,
  presetOf,
  stricter
} from '../policy/presets';
import type { IPolicyRule } from '../policy/types';

function rule(fields: Partial<IPolicyRule>): IPolicyRule {
  return {
    path: 'data',
    kind: 'folder',
    classes: {},
    source: 'operator',
    ...fields
  };
}

describe('presets', () => {
  it('are the contract: full allows all, read-only denies all but read', () => {
    expect(Object.values(PRESET_CLASSES.full)).toEqual(Array(5).fill('allow'));
    expect(PRESET_CLASSES['ask-changes']).toMatchObject({
      edit: 'ask',
      destructive: 'ask',
      run: 'allow',
      python: 'allow'
    });
    expect(PRESET_CLASSES['ask-running']).toMatchObject({
      run: 'ask',
      python: 'ask',
      edit: 'allow',
      destructive: 'allow'
    });
    expect(PRESET_CLASSES['read-only']).toEqual({
      read: 'allow',
      edit: 'deny',
      run: 'deny',
      python: 'deny',
      destructive: 'deny'
    });
  });

  it('are recognised from their decisions, missing classes allowed', () => {
    for (const preset of PRESETS) {
      expect(presetOf(PRESET_CLASSES[preset])).toBe(preset);
    }
    expect(presetOf({})).toBe('full');
    expect(presetOf({ run: 'ask', python: 'ask' })).toBe('ask-running');
    expect(presetOf({ run: 'deny' })).toBe('custom');
  });

  it('order decisions deny > ask > allow', () => {
    expect(stricter('allow', 'ask')).toBe('ask');
    expect(stricter('deny', 'ask')).toBe('deny');
    expect(stricter('allow', 'allow')).toBe('allow');
  });
});

describe('operator limits', () => {
  it('are the strictest operator decision per class, person rules ignored', () => {
    const limits = operatorLimits([
      rule({ classes: { run: 'ask', edit: 'allow' } }),
      rule({ classes: { run: 'deny', python: 'ask' } }),
      rule({ source: 'person', classes: { edit: 'deny' } })
    ]);
    expect(limits).toEqual({ run: 'deny', python: 'ask' });
  });

  it('hold the classes a looser preset would loosen', () => {
    const limits = { run: 'ask', destructive: 'deny' } as const;
    expect(heldByOperator('full', limits)).toEqual(['run', 'destructive']);
    expect(heldByOperator('ask-running', limits)).toEqual(['destructive']);
    expect(heldByOperator('ask-changes', limits)).toEqual([
      'run',
      'destructive'
    ]);
    expect(heldByOperator('read-only', limits)).toEqual([]);
  });

  it('say in one line what the server sets', () => {
    expect(limitsLine({})).toBeNull();
    expect(limitsLine({ edit: 'deny', run: 'ask' })).toBe(
      'Set by the server: edit denied, run asks you'
    );
  });
});

describe('the chosen preset', () => {
  it("is the person's own rule's, else the effective one", () => {
    const policy = parsePolicy({
      path: 'data/a.ipynb',
      effective: {
        read: 'allow',
        edit: 'deny',
        run: 'ask',
        python: 'ask',
        destructive: 'deny'
      },
      preset: 'custom',
      rules: [
        {
          path: 'data/*',
          kind: 'folder',
          classes: { edit: 'deny', destructive: 'deny' },
          source: 'operator'
        },
        {
          path: 'data/a.ipynb',
          kind: 'notebook',
          classes: { run: 'ask', python: 'ask' },
          source: 'person'
        }
      ]
    });
    expect(chosenPreset(policy, 'data/a.ipynb', 'notebook')).toBe(
      'ask-running'
    );
    expect(chosenPreset(policy, 'data', 'folder')).toBe('custom');
  });
});

describe('parsePolicy', () => {
  it('reads unknown decisions as allow and drops malformed rules', () => {
    const policy = parsePolicy({
      path: 'a.ipynb',
      effective: { edit: 'maybe', run: 'deny' },
      preset: 'nonsense',
      rules: [null, { kind: 'folder' }, { path: 'a.ipynb', classes: [] }]
    });
    expect(policy.effective).toEqual({
      read: 'allow',
      edit: 'allow',
      run: 'deny',
      python: 'allow',
      destructive: 'allow'
    });
    expect(policy.preset).toBe('custom');
    expect(policy.rules).toEqual([
      { path: 'a.ipynb', kind: 'notebook', classes: {}, source: 'person' }
    ]);
  });
});
