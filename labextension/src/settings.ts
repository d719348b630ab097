/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The extension's settings (`schema/*.json`), read from the lab's setting registry and followed
 * live: each change of a setting is applied at once, without a reload.
 */

import type { ISettingRegistry } from '@jupyterlab/settingregistry';
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import type { ISignal } from '@lumino/signaling';

import { ActivityModel } from './core/activity';
import type { ActivityFilter } from './core/activity';

/**
 * What the extension reads of a plugin's settings (the lab's `ISettings` has it).
 */
export interface ISettingsSource {
  /** The settings as the person set them over the schema's defaults. */
  readonly composite: ReadonlyPartialJSONObject;
  /** Emitted when any of them changes. */
  readonly changed: ISignal<unknown, unknown>;
}

/**
 * Apply a plugin's settings now and each time they change.
 */
export function followSettings(
  settings: ISettingsSource,
  apply: (composite: ReadonlyPartialJSONObject) => void
): void {
  apply(settings.composite);
  settings.changed.connect(() => apply(settings.composite));
}

/**
 * Load the settings of plugin `id` and follow them; without a setting registry (or when the
 * settings cannot be loaded), the defaults in the code stay.
 */
export function loadSettings(
  registry: ISettingRegistry | null,
  id: string,
  apply: (composite: ReadonlyPartialJSONObject) => void
): void {
  registry
    ?.load(id)
    .then(settings => followSettings(settings, apply))
    .catch(reason =>
      console.warn(`jupyter-xcsh: could not load the settings of ${id}`, reason)
    );
}

/**
 * The activity panel's settings.
 */
export interface IActivitySettings {
  /** Which calls the panel lists. */
  filter: ActivityFilter;
  /** How many calls it keeps. */
  maxCalls: number;
}

/**
 * The activity panel's settings out of a composite, unknown values replaced by the defaults.
 */
export function activitySettings(
  composite: ReadonlyPartialJSONObject
): IActivitySettings {
  const filter = composite.filter;
  const maxCalls = composite.maxCalls;
  return {
    filter:
      filter === 'notebook' || filter === 'python' || filter === 'all'
        ? filter
        : 'all',
    maxCalls:
      typeof maxCalls === 'number' && Number.isFinite(maxCalls) && maxCalls >= 1
        ? Math.floor(maxCalls)
        : ActivityModel.MAX_CALLS
  };
}

/**
 * What applies the activity panel's settings to its model and panel: the
 * calls kept at each change; the filter only when its setting changes, so
 * that a filter chosen in the panel stays while another setting changes.
 */
export function activitySettingsApplier(
  model: { maxCalls: number },
  panel: { filter: ActivityFilter }
): (composite: ReadonlyPartialJSONObject) => void {
  let filter: ActivityFilter | null = null;
  return composite => {
    const settings = activitySettings(composite);
    model.maxCalls = settings.maxCalls;
    if (settings.filter !== filter) {
      filter = settings.filter;
      panel.filter = settings.filter;
    }
  };
}

/**
 * Whether the marks are shown, out of the marks plugin's composite settings.
 */
export function marksEnabled(composite: ReadonlyPartialJSONObject): boolean {
  return composite.enabled !== false;
}
