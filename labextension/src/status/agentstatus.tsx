/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { VDomModel, VDomRenderer } from '@jupyterlab/apputils';
import { TextItem } from '@jupyterlab/statusbar';
import type { TranslationBundle } from '@jupyterlab/translation';
import React from 'react';

import type { ActivityModel } from '../core/activity';
import { UNTRANSLATED } from '../translation';

/**
 * What the status bar item says: `Agent: idle` or `Agent: <n> running`.
 */
export function agentStatusText(
  running: number,
  trans: TranslationBundle = UNTRANSLATED
): string {
  return running === 0
    ? trans.__('Agent: idle')
    : trans.__('Agent: %1 running', running);
}

/**
 * The number of running agent calls, from the activity model.
 */
export class AgentStatusModel extends VDomModel {
  /**
   * Follow the running calls of `activity`.
   */
  constructor(private readonly activity: ActivityModel) {
    super();
    activity.changed.connect(this._update, this);
    this._running = activity.runningCount;
  }

  /**
   * How many agent calls are running.
   */
  get running(): number {
    return this._running;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.activity.changed.disconnect(this._update, this);
    super.dispose();
  }

  private _update(): void {
    const running = this.activity.runningCount;
    if (running !== this._running) {
      this._running = running;
      this.stateChanged.emit();
    }
  }

  private _running: number;
}

/**
 * The `Agent` item of the status bar; clicking it shows the activity panel.
 */
export class AgentStatus extends VDomRenderer<AgentStatusModel> {
  /**
   * Create the item.
   *
   * @param model - The running calls.
   * @param onClick - Shows the activity panel.
   * @param trans - The extension's strings in the lab's language.
   */
  constructor(
    model: AgentStatusModel,
    private readonly onClick: () => void,
    private readonly trans: TranslationBundle = UNTRANSLATED
  ) {
    super(model);
    this.addClass('jp-xcsh-AgentStatus');
    // The status bar's own hover and press styles of clickable items.
    this.addClass('jp-mod-highlighted');
  }

  protected render(): React.ReactElement {
    const running = this.model.running;
    const trans = this.trans;
    const onKeyDown = (event: React.KeyboardEvent) => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        this.onClick();
      }
    };
    return (
      <TextItem
        role="button"
        tabIndex={0}
        className="jp-xcsh-AgentStatus-text"
        data-running={running}
        source={agentStatusText(running, trans)}
        title={
          running === 0
            ? trans.__(
                'No agent call is running. Click to show the agent activity; right-click to connect an agent.'
              )
            : trans._n(
                '%1 agent call is running. Click to show the agent activity; right-click to connect an agent.',
                '%1 agent calls are running. Click to show the agent activity; right-click to connect an agent.',
                running
              )
        }
        onClick={this.onClick}
        onKeyDown={onKeyDown}
      />
    );
  }
}
