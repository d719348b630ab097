/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  accessButtonLabel,
  accessButtonTitle,
  PolicyStore
} from '../policy/access';
import { parsePolicy } from '../policy/parse';
import { PRESET_CLASSES } from '../policy/presets';
import type { IPolicy, PolicyRequest, RuleKind } from '../policy/types';

/** A server keeping the person's rules per path, under one operator rule. */
class FakeServer {
  rules = new Map<string, PolicyRequest>();
  calls: string[] = [];
  failing = false;
  async getPolicy(path: string): Promise<IPolicy> {
    this.calls.push(`GET ${path}`);
    if (this.failing) {
      throw new Error('unreachable');
    }
    const own = this.rules.get(path);
    const classes =
      own && 'preset' in own ? PRESET_CLASSES[own.preset] : PRESET_CLASSES.full;
    return parsePolicy({
      path,
      effective: { ...classes, python: 'ask' },
      preset: own && 'preset' in own ? own.preset : 'custom',
      rules: [
        {
          path: '**',
          kind: 'folder',
          classes: { python: 'ask' },
          source: 'operator'
        },
        ...(own ? [{ ...own, classes, source: 'person' }] : [])
      ]
    });
  }
  async setPolicy(request: PolicyRequest): Promise<IPolicy> {
    this.calls.push(`PUT ${request.path}`);
    this.rules.set(request.path, request);
    return this.getPolicy(request.path);
  }
  async deletePolicy(path: string, kind: RuleKind): Promise<void> {
    this.calls.push(`DELETE ${path} ${kind}`);
    this.rules.delete(path);
  }
}

describe('PolicyStore', () => {
  it('reads, sets and removes a rule, telling its path', async () => {
    const server = new FakeServer();
    const store = new PolicyStore(server);
    const changed: string[] = [];
    store.changed.connect((_, path) => changed.push(path));
    await store.refresh('a.ipynb');
    expect(store.get('a.ipynb')?.preset).toBe('custom');
    await store.choose('a.ipynb', 'notebook', 'read-only');
    expect(store.get('a.ipynb')?.effective.edit).toBe('deny');
    await store.choose('a.ipynb', 'notebook', 'inherit');
    expect(server.calls).toContain('DELETE a.ipynb notebook');
    expect(store.get('a.ipynb')?.effective.edit).toBe('allow');
    expect(changed).toEqual(['a.ipynb', 'a.ipynb', 'a.ipynb']);
  });

  it('reads the paths below a folder again when the folder changes', async () => {
    const server = new FakeServer();
    const store = new PolicyStore(server);
    await store.refresh('data/a.ipynb');
    await store.refresh('other.ipynb');
    server.calls = [];
    await store.choose('data', 'folder', 'ask-changes');
    await Promise.resolve();
    expect(server.calls).toEqual(['PUT data', 'GET data', 'GET data/a.ipynb']);
  });

  it('keeps why a read failed, and the policy read before', async () => {
    const server = new FakeServer();
    const store = new PolicyStore(server);
    server.failing = true;
    expect(await store.refresh('a.ipynb')).toBeNull();
    expect(store.error('a.ipynb')).toBe('unreachable');
    expect(
      accessButtonTitle(undefined, 'a.ipynb', 'notebook', 'unreachable')
    ).toBe('Agent access could not be read: unreachable');
  });
});

describe('the toolbar item', () => {
  it('says the effective access and what the server holds', async () => {
    const store = new PolicyStore(new FakeServer());
    await store.choose('a.ipynb', 'notebook', 'ask-changes');
    const policy = store.get('a.ipynb');
    expect(accessButtonLabel(policy)).toBe('Agents: Ask before changes');
    expect(accessButtonLabel(undefined)).toBe('Agents: …');
    expect(accessButtonTitle(policy, 'a.ipynb', 'notebook', null)).toBe(
      [
        'Agent access: Ask before changes (click to change)',
        'Set by the server: python asks you'
      ].join('\n')
    );
  });
});
