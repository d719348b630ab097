/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import { Signal } from '@lumino/signaling';
import { Title, Widget } from '@lumino/widgets';

import { UnreadBadge, UNREAD_CLASS } from '../panel/badge';
import { PYTHON_SCHEMA_ID } from '../core/events';
import { ActivityModel } from '../core/activity';
import { agentStatusText, AgentStatusModel } from '../status/agentstatus';

function started(callId: string) {
  return {
    schema_id: PYTHON_SCHEMA_ID,
    callId,
    event: 'started',
    cells: [{ index: 0, title: '', code: 'import time; time.sleep(3)' }]
  };
}

function finished(callId: string) {
  return {
    schema_id: PYTHON_SCHEMA_ID,
    callId,
    event: 'finished',
    result: { isError: false, cells: [] }
  };
}

describe('the Agent status bar item', () => {
  it('says idle, or how many calls run', () => {
    expect(agentStatusText(0)).toBe('Agent: idle');
    expect(agentStatusText(1)).toBe('Agent: 1 running');
    expect(agentStatusText(3)).toBe('Agent: 3 running');
  });

  it('follows the running calls and re-renders only when their number changes', () => {
    const activity = new ActivityModel();
    const model = new AgentStatusModel(activity);
    const renders = jest.fn();
    model.stateChanged.connect(renders);

    activity.handleEmission(started('a'));
    expect(model.running).toBe(1);
    activity.handleEmission({
      schema_id: PYTHON_SCHEMA_ID,
      callId: 'a',
      event: 'chunk',
      cellIndex: 0,
      text: 'tick'
    });
    activity.handleEmission(finished('a'));

    expect(model.running).toBe(0);
    expect(renders).toHaveBeenCalledTimes(2);
    model.dispose();
    activity.handleEmission(started('b'));
    expect(renders).toHaveBeenCalledTimes(2);
  });
});

/**
 * A panel double: a title, a visibility, and a shown signal.
 */
class FakePanel {
  title = new Title<Widget>({
    owner: new Widget(),
    caption: 'Agent activity',
    dataset: { id: 'panel-id' }
  });
  isVisible = false;
  shown = new Signal<this, void>(this);
}

describe('UnreadBadge', () => {
  it('counts calls that arrive while the panel is hidden', () => {
    const model = new ActivityModel();
    const panel = new FakePanel();
    const badge = new UnreadBadge(panel, model);

    model.handleEmission(started('a'));
    model.handleEmission(started('b'));
    model.handleEmission(finished('a')); // an update, not a new call

    expect(badge.count).toBe(2);
    expect(panel.title.className).toContain(UNREAD_CLASS);
    expect(panel.title.dataset).toEqual({ id: 'panel-id', 'xcsh-unread': '2' });
    expect(panel.title.caption).toBe('Agent activity (2 new)');
  });

  it('clears when the panel is shown, and counts nothing while visible', () => {
    const model = new ActivityModel();
    const panel = new FakePanel();
    const badge = new UnreadBadge(panel, model);
    model.handleEmission(started('a'));

    panel.isVisible = true;
    panel.shown.emit();
    model.handleEmission(started('b'));

    expect(badge.count).toBe(0);
    expect(panel.title.className).not.toContain(UNREAD_CLASS);
    expect(panel.title.dataset).toEqual({ id: 'panel-id' });
    expect(panel.title.caption).toBe('Agent activity');
  });

  it('caps the label at 99+', () => {
    const model = new ActivityModel();
    const panel = new FakePanel();
    new UnreadBadge(panel, model);
    for (let i = 0; i < 120; i++) {
      model.handleEmission(started(`c${i}`));
    }
    expect(panel.title.dataset).toEqual({
      id: 'panel-id',
      'xcsh-unread': '99+'
    });
  });
});
