/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * "Agent access": what agents may do with a notebook or a folder, as the person sees and
 * sets it. {@link PolicyStore} keeps the server's answers per path (no DOM);
 * {@link AgentAccessButton} is the notebook toolbar's item opening the menu.
 */

import type { TranslationBundle } from '@jupyterlab/translation';
import { ISignal, Signal } from '@lumino/signaling';
import type { Menu } from '@lumino/widgets';
import { Widget } from '@lumino/widgets';

import { UNTRANSLATED } from '../translation';
import type { IPolicyAPI } from './api';
import {
  chosenPreset,
  limitsLine,
  operatorLimits,
  presetLabel
} from './presets';
import type { IPolicy, Preset, RuleKind } from './types';

/**
 * What the person can choose in the menu: a preset, or `inherit` (remove their own rule: the
 * folder's access, or the default, applies).
 */
export type AccessChoice = Preset | 'inherit';

/**
 * The policies of the paths the lab shows, as the server last answered.
 */
export class PolicyStore {
  /**
   * Create an empty store reading through `api`.
   */
  constructor(
    private readonly api: Pick<
      IPolicyAPI,
      'getPolicy' | 'setPolicy' | 'deletePolicy'
    >
  ) {}

  /**
   * Emitted with a path when its policy (or the failure to read it) changes.
   */
  get changed(): ISignal<this, string> {
    return this._changed;
  }

  /**
   * The policy of `path` as last read, if any.
   */
  get(path: string): IPolicy | undefined {
    return this._policies.get(path);
  }

  /**
   * Why the last read or change of `path` failed, or `null`.
   */
  error(path: string): string | null {
    return this._errors.get(path) ?? null;
  }

  /**
   * Read the policy of `path` again (a failure is kept in {@link error}).
   */
  async refresh(path: string): Promise<IPolicy | null> {
    try {
      return this._set(path, await this.api.getPolicy(path));
    } catch (error) {
      this._fail(path, error);
      return null;
    }
  }

  /**
   * Read every path known (another lab or the operator may have changed them).
   */
  async refreshAll(): Promise<void> {
    await Promise.all([...this._policies.keys()].map(p => this.refresh(p)));
  }

  /**
   * Set the person's access of a notebook or folder; the store holds the answer.
   *
   * @throws The server's refusal, after it is kept in {@link error}.
   */
  async choose(
    path: string,
    kind: RuleKind,
    choice: AccessChoice
  ): Promise<IPolicy | null> {
    try {
      if (choice === 'inherit') {
        await this.api.deletePolicy(path, kind);
        return this._set(path, await this.api.getPolicy(path));
      }
      return this._set(
        path,
        await this.api.setPolicy({ path, kind, preset: choice })
      );
    } catch (error) {
      this._fail(path, error);
      throw error;
    }
  }

  /**
   * Changed paths below a folder are stale too: read them again.
   */
  private _set(path: string, policy: IPolicy): IPolicy {
    this._policies.set(path, policy);
    this._errors.delete(path);
    this._changed.emit(path);
    for (const other of this._policies.keys()) {
      if (other !== path && (path === '' || other.startsWith(`${path}/`))) {
        void this.refresh(other);
      }
    }
    return policy;
  }

  private _fail(path: string, error: unknown): void {
    this._errors.set(
      path,
      error instanceof Error ? error.message : String(error)
    );
    this._changed.emit(path);
  }

  private _policies = new Map<string, IPolicy>();
  private _errors = new Map<string, string>();
  private _changed = new Signal<this, string>(this);
}

/**
 * What the toolbar item says of a policy, e.g. "Agents: Ask before running".
 */
export function accessButtonLabel(
  policy: IPolicy | undefined,
  trans: TranslationBundle = UNTRANSLATED
): string {
  return policy === undefined
    ? trans.__('Agents: …')
    : trans.__('Agents: %1', presetLabel(policy.preset, trans));
}

/**
 * What the toolbar item says on hover: the effective access, who limits it.
 */
export function accessButtonTitle(
  policy: IPolicy | undefined,
  path: string,
  kind: RuleKind,
  error: string | null,
  trans: TranslationBundle = UNTRANSLATED
): string {
  if (policy === undefined) {
    return error !== null
      ? trans.__('Agent access could not be read: %1', error)
      : trans.__('Agent access');
  }
  const lines = [
    trans.__(
      'Agent access: %1 (click to change)',
      presetLabel(policy.preset, trans)
    )
  ];
  const chosen = chosenPreset(policy, path, kind);
  if (chosen !== policy.preset) {
    lines.push(trans.__('You chose: %1', presetLabel(chosen, trans)));
  }
  const limits = limitsLine(operatorLimits(policy.rules), trans);
  if (limits !== null) {
    lines.push(limits);
  }
  return lines.join('\n');
}

/**
 * The notebook toolbar's "Agent access" item: says the effective access, opens the menu.
 */
export class AgentAccessButton extends Widget {
  /**
   * Create the item of the notebook at `path()` (a notebook may be renamed).
   */
  constructor(
    private readonly store: PolicyStore,
    private readonly path: () => string,
    private readonly menu: () => Menu,
    private readonly trans: TranslationBundle = UNTRANSLATED
  ) {
    super();
    this.addClass('jp-xcsh-AgentAccess');
    this.addClass('jp-ToolbarButton');
    this._button = document.createElement('button');
    this._button.type = 'button';
    this._button.className =
      'jp-ToolbarButtonComponent jp-mod-minimal jp-Button jp-xcsh-AgentAccess-button';
    this._button.setAttribute('aria-haspopup', 'menu');
    this._label = document.createElement('span');
    this._label.className = 'jp-ToolbarButtonComponent-label';
    this._button.append(this._label);
    this.node.append(this._button);
    this._button.addEventListener('click', () => this.open());
    store.changed.connect(this._onChanged, this);
    this.render();
    void store.refresh(path());
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.store.changed.disconnect(this._onChanged, this);
    super.dispose();
  }

  /**
   * Open the menu under the item (the policy is read again meanwhile).
   */
  open(): void {
    void this.store.refresh(this.path());
    const rect = this._button.getBoundingClientRect();
    this.menu().open(rect.left, rect.bottom);
  }

  /**
   * Show the policy as the store holds it.
   */
  render(): void {
    const path = this.path();
    const policy = this.store.get(path);
    const limited =
      policy !== undefined && limitsLine(operatorLimits(policy.rules)) !== null;
    this._label.textContent = accessButtonLabel(policy, this.trans);
    this._button.title = accessButtonTitle(
      policy,
      path,
      'notebook',
      this.store.error(path),
      this.trans
    );
    this.node.dataset.preset = policy?.preset ?? '';
    this.node.classList.toggle('jp-mod-limited', limited);
    this.node.classList.toggle(
      'jp-mod-restricted',
      policy !== undefined && policy.preset !== 'full'
    );
  }

  private _onChanged(_: PolicyStore, path: string): void {
    if (path === this.path()) {
      this.render();
    }
  }

  private _button: HTMLButtonElement;
  private _label: HTMLSpanElement;
}
