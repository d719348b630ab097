/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The approvals in the activity panel: a section above the calls listing the requests
 * waiting (each can be answered from there) and every ask, answer, expiry and refusal.
 */

import type { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import type { ApprovalQueue } from './approvals';
import { renderApprovalSection } from './render';

/**
 * The activity panel's approvals section; it renders the queue, hidden while it is empty.
 */
export class ApprovalSection extends Widget {
  /**
   * Show `queue`; `open` shows a request's dialog.
   */
  constructor(
    private readonly queue: ApprovalQueue,
    private readonly trans: TranslationBundle,
    private readonly open: (id: string) => void
  ) {
    super();
    this.addClass('jp-xcsh-ApprovalSection');
    queue.changed.connect(this.render, this);
    this.render();
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.queue.changed.disconnect(this.render, this);
    super.dispose();
  }

  /**
   * Render the queue now.
   */
  render(): void {
    const { pending, log } = this.queue;
    const wasOpen =
      this.node.querySelector('details')?.hasAttribute('open') ?? null;
    this.node.replaceChildren(
      renderApprovalSection(pending, log, this.trans, this.open)
    );
    const details = this.node.querySelector('details');
    if (wasOpen !== null && details !== null) {
      details.open = wasOpen; // the person's choice stays across renders
    }
    this.setHidden(pending.length === 0 && log.length === 0);
  }
}
