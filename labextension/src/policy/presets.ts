/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The "Agent access" choices and what the operator's rules leave of them (pure: no DOM,
 * no I/O). The server decides; this only says what the menu shows.
 */

import type { TranslationBundle } from '@jupyterlab/translation';

import { UNTRANSLATED } from '../translation';
import {
  type Decision,
  type IPolicy,
  type IPolicyRule,
  type PolicyClass,
  type PolicyClasses,
  type Preset,
  type PresetOrCustom,
  POLICY_CLASSES
} from './types';

/**
 * The presets, in the menu's order (loosest first).
 */
export const PRESETS: readonly Preset[] = [
  'full',
  'ask-changes',
  'ask-running',
  'read-only'
];

/**
 * The decisions of each preset (the server's shorthand, docs/users/policies.md).
 */
export const PRESET_CLASSES: Readonly<
  Record<Preset, Record<PolicyClass, Decision>>
> = {
  full: {
    read: 'allow',
    edit: 'allow',
    run: 'allow',
    python: 'allow',
    destructive: 'allow'
  },
  'ask-changes': {
    read: 'allow',
    edit: 'ask',
    run: 'allow',
    python: 'allow',
    destructive: 'ask'
  },
  'ask-running': {
    read: 'allow',
    edit: 'allow',
    run: 'ask',
    python: 'ask',
    destructive: 'allow'
  },
  'read-only': {
    read: 'allow',
    edit: 'deny',
    run: 'deny',
    python: 'deny',
    destructive: 'deny'
  }
};

const STRICTNESS: Record<Decision, number> = { allow: 0, ask: 1, deny: 2 };

/**
 * The stricter of two decisions (deny > ask > allow).
 */
export function stricter(a: Decision, b: Decision): Decision {
  return STRICTNESS[a] >= STRICTNESS[b] ? a : b;
}

/**
 * The preset whose decisions these are, or `custom`.
 */
export function presetOf(classes: PolicyClasses): PresetOrCustom {
  for (const preset of PRESETS) {
    if (
      POLICY_CLASSES.every(
        c => (classes[c] ?? 'allow') === PRESET_CLASSES[preset][c]
      )
    ) {
      return preset;
    }
  }
  return 'custom';
}

/**
 * The decisions the operator's rules impose on a path: per class, the strictest of every
 * matching operator rule (classes they leave at `allow` are left out).
 */
export function operatorLimits(rules: readonly IPolicyRule[]): PolicyClasses {
  const limits: PolicyClasses = {};
  for (const rule of rules) {
    if (rule.source !== 'operator') {
      continue;
    }
    for (const cls of POLICY_CLASSES) {
      const decision = rule.classes[cls];
      if (decision !== undefined && decision !== 'allow') {
        limits[cls] = stricter(limits[cls] ?? 'allow', decision);
      }
    }
  }
  return limits;
}

/**
 * The classes a preset would loosen below the operator's limits: those the person cannot
 * have as the preset says (the operator's stricter decision holds).
 */
export function heldByOperator(
  preset: Preset,
  limits: PolicyClasses
): PolicyClass[] {
  return POLICY_CLASSES.filter(cls => {
    const limit = limits[cls];
    return (
      limit !== undefined &&
      STRICTNESS[limit] > STRICTNESS[PRESET_CLASSES[preset][cls]]
    );
  });
}

/**
 * The person's own rule for exactly this path and kind, if any.
 */
export function personRule(
  policy: IPolicy,
  path: string,
  kind: 'notebook' | 'folder'
): IPolicyRule | null {
  return (
    policy.rules.find(
      r => r.source === 'person' && r.path === path && r.kind === kind
    ) ?? null
  );
}

/**
 * What the menu shows as chosen: the person's own rule's preset when there is one, else
 * the effective preset.
 */
export function chosenPreset(
  policy: IPolicy,
  path: string,
  kind: 'notebook' | 'folder'
): PresetOrCustom {
  const own = personRule(policy, path, kind);
  return own !== null ? presetOf(own.classes) : policy.preset;
}

/**
 * A preset's name in the menu.
 */
export function presetLabel(
  preset: PresetOrCustom,
  trans: TranslationBundle = UNTRANSLATED
): string {
  switch (preset) {
    case 'full':
      return trans.__('Full access');
    case 'ask-changes':
      return trans.__('Ask before changes');
    case 'ask-running':
      return trans.__('Ask before running');
    case 'read-only':
      return trans.__('Read only');
    default:
      return trans.__('Custom');
  }
}

/**
 * What a preset lets agents do, in one sentence.
 */
export function presetCaption(
  preset: Preset,
  trans: TranslationBundle = UNTRANSLATED
): string {
  switch (preset) {
    case 'full':
      return trans.__('Agents read, edit and run without asking.');
    case 'ask-changes':
      return trans.__(
        'Agents ask you before they edit, delete, overwrite or restart.'
      );
    case 'ask-running':
      return trans.__('Agents ask you before they run code.');
    case 'read-only':
      return trans.__('Agents may only read.');
  }
}

/**
 * A class's name.
 */
export function classLabel(
  cls: PolicyClass,
  trans: TranslationBundle = UNTRANSLATED
): string {
  switch (cls) {
    case 'read':
      return trans.__('read');
    case 'edit':
      return trans.__('edit');
    case 'run':
      return trans.__('run');
    case 'python':
      return trans.__('python');
    case 'destructive':
      return trans.__('delete, overwrite or restart');
  }
}

/**
 * A decision's name.
 */
export function decisionLabel(
  decision: Decision,
  trans: TranslationBundle = UNTRANSLATED
): string {
  switch (decision) {
    case 'allow':
      return trans.__('allowed');
    case 'ask':
      return trans.__('asks you');
    case 'deny':
      return trans.__('denied');
  }
}

/**
 * What the operator's limits are, in one line (`null` when there are none), e.g.
 * "Set by the server: edit denied, run asks you".
 */
export function limitsLine(
  limits: PolicyClasses,
  trans: TranslationBundle = UNTRANSLATED
): string | null {
  const parts = POLICY_CLASSES.filter(c => limits[c] !== undefined).map(c =>
    trans.__(
      '%1 %2',
      classLabel(c, trans),
      decisionLabel(limits[c] as Decision, trans)
    )
  );
  return parts.length === 0
    ? null
    : trans.__('Set by the server: %1', parts.join(', '));
}
