/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * What the "Connect an agent" dialog says, apart from the DOM: the last agent call the lab saw,
 * and the answer of the MCP endpoint to a test handshake.
 */

import type { TranslationBundle } from '@jupyterlab/translation';

import type { ActivityCall } from '../core/activity';
import { UNTRANSLATED } from '../translation';

/**
 * The newest agent call the lab saw: what it was and when.
 */
export interface ILastAgentCall {
  /** `notebook <action>`, `python` or `run`. */
  readonly what: string;
  /** The notebook, or the python session. */
  readonly target: string;
  /** When it was first seen (ms since the epoch). */
  readonly time: number;
}

/**
 * The newest of `calls` (the activity panel's, newest first) that an agent made: reverts the
 * person made from the lab are theirs, not an agent's.
 */
export function lastAgentCall(
  calls: readonly ActivityCall[]
): ILastAgentCall | null {
  let newest: ILastAgentCall | null = null;
  for (const call of calls) {
    if (call.kind === 'notebook' && call.undoOf !== null) {
      continue;
    }
    const last: ILastAgentCall =
      call.kind === 'notebook'
        ? {
            what: `notebook ${call.event.action}`,
            target: call.event.path,
            time: call.time
          }
        : call.path !== null
          ? { what: 'run', target: call.path, time: call.time }
          : { what: 'python', target: call.session ?? '', time: call.time };
    if (newest === null || last.time > newest.time) {
      newest = last;
    }
  }
  return newest;
}

/**
 * How long ago `time` was, in words: `just now`, `5 s ago`, `3 min ago`, `2 h ago`.
 */
export function ago(
  time: number,
  now: number,
  trans: TranslationBundle = UNTRANSLATED
): string {
  const seconds = Math.max(0, Math.round((now - time) / 1000));
  if (seconds < 5) {
    return trans.__('just now');
  }
  if (seconds < 60) {
    return trans.__('%1 s ago', seconds);
  }
  if (seconds < 3600) {
    return trans.__('%1 min ago', Math.floor(seconds / 60));
  }
  return trans.__('%1 h ago', Math.floor(seconds / 3600));
}

/**
 * The sentence about the last agent call, for the dialog's connection test.
 */
export function describeLastCall(
  last: ILastAgentCall | null,
  now: number,
  trans: TranslationBundle = UNTRANSLATED
): string {
  if (last === null) {
    return trans.__(
      'No agent has called a tool since this page was opened: start your agent with the configuration above and ask it to list the files.'
    );
  }
  return trans.__(
    'Last agent call: %1 on %2, %3.',
    last.what,
    last.target || trans.__('the default session'),
    ago(last.time, now, trans)
  );
}

/**
 * What the endpoint said to the test handshake.
 */
export interface IHandshake {
  readonly serverName: string;
  readonly serverVersion: string;
  readonly tools: readonly string[];
}

/**
 * The JSON-RPC result of an MCP answer: a JSON body, or the last `data:` message of an
 * event stream. Throws the JSON-RPC error's message.
 */
export function mcpResult(text: string): Record<string, unknown> {
  let body = text.trim();
  if (!body.startsWith('{')) {
    const data = body
      .split(/\r?\n/)
      .filter(line => line.startsWith('data:'))
      .map(line => line.slice(5).trim());
    body = data.length ? data[data.length - 1] : '{}';
  }
  const message = JSON.parse(body) as {
    result?: Record<string, unknown>;
    error?: { message?: string };
  };
  if (message.error) {
    throw new Error(message.error.message ?? 'MCP error');
  }
  return message.result ?? {};
}

/**
 * The sentence about a successful handshake.
 */
export function describeHandshake(
  handshake: IHandshake,
  trans: TranslationBundle = UNTRANSLATED
): string {
  return trans._n(
    'Connected: %2 %3 answered with %1 tool (%4).',
    'Connected: %2 %3 answered with %1 tools (%4).',
    handshake.tools.length,
    handshake.serverName,
    handshake.serverVersion,
    handshake.tools.join(', ')
  );
}
