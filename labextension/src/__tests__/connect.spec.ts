/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

import {
  ago,
  describeHandshake,
  describeLastCall,
  lastAgentCall,
  mcpResult
} from '../connect/model';
import { PYTHON_SCHEMA_ID } from '../core/events';
import { ActivityModel } from '../core/activity';
import { notebookEditEmission } from './helpers';

describe('the connect dialog', () => {
  it('names the newest agent call, never a revert the person made', () => {
    const activity = new ActivityModel();
    expect(lastAgentCall(activity.calls)).toBeNull();

    activity.handleEmission(notebookEditEmission('c1'));
    activity.handleEmission({
      schema_id: PYTHON_SCHEMA_ID,
      callId: 'p1',
      event: 'started',
      session: 'analysis',
      cells: [{ index: 0, title: '', code: '1' }]
    });
    const last = lastAgentCall(activity.calls);
    expect(last?.what).toBe('python');
    expect(last?.target).toBe('analysis');

    // The person's revert of c1 (made from the lab) is theirs: the agent's last call stays.
    activity.handleEmission(notebookEditEmission('r1'));
    activity.linkUndo('r1', 'c1');
    expect(lastAgentCall(activity.calls)?.what).toBe('python');
  });

  it('says when the last call was, or that none came yet', () => {
    expect(ago(1000, 2000)).toBe('just now');
    expect(ago(0, 30_000)).toBe('30 s ago');
    expect(ago(0, 180_000)).toBe('3 min ago');
    expect(ago(0, 7_300_000)).toBe('2 h ago');
    expect(
      describeLastCall(
        { what: 'notebook edit', target: 'a.ipynb', time: 0 },
        120_000
      )
    ).toBe('Last agent call: notebook edit on a.ipynb, 2 min ago.');
    expect(describeLastCall(null, 0)).toMatch(/^No agent has called a tool/);
  });

  it('reads an MCP answer as JSON or as an event stream, and its errors', () => {
    expect(mcpResult('{"jsonrpc":"2.0","id":1,"result":{"a":1}}')).toEqual({
      a: 1
    });
    const stream =
      ': keep-alive\n\nevent: message\ndata: {"jsonrpc":"2.0","id":2,"result":{"tools":[]}}\n\n';
    expect(mcpResult(stream)).toEqual({ tools: [] });
    expect(() =>
      mcpResult('{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}')
    ).toThrow('no');
    expect(
      describeHandshake({
        serverName: 'jupyter-xcsh',
        serverVersion: '0.2',
        tools: ['notebook', 'python']
      })
    ).toBe(
      'Connected: jupyter-xcsh 0.2 answered with 2 tools (notebook, python).'
    );
  });
});
