/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The person's side of agent policies and approvals: one function per endpoint
 * (`/api/xcsh/policies`, `/api/xcsh/approvals`). These are the lab's, never an agent's tool.
 */

import { URLExt } from '@jupyterlab/coreutils';
import type { ServerConnection } from '@jupyterlab/services';

import { requestAPI } from '../request';
import {
  parseApproval,
  parseApprovals,
  parseApprovalsVersion,
  parsePolicy
} from './parse';
import type {
  ApprovalDecision,
  IApproval,
  IPolicy,
  PolicyRequest,
  RuleKind
} from './types';
import type { IApprovalList, IApprovalWatchQuery } from './watch';

/**
 * The policy of a path: the effective decisions and the rules that match it.
 */
export async function getPolicy(
  settings: ServerConnection.ISettings,
  path: string
): Promise<IPolicy> {
  const query = URLExt.objectToQueryString({ path });
  const response = await requestAPI(
    `policies${query}`,
    { method: 'GET' },
    settings
  );
  return parsePolicy(await response.json());
}

/**
 * Set the person's rule of a notebook or folder; answers the path's policy as it is now.
 */
export async function setPolicy(
  settings: ServerConnection.ISettings,
  request: PolicyRequest
): Promise<IPolicy> {
  const response = await requestAPI(
    'policies',
    {
      method: 'PUT',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(request)
    },
    settings
  );
  return parsePolicy(await response.json());
}

/**
 * Remove the person's rule of a notebook or folder (the folder's, or the default, applies).
 */
export async function deletePolicy(
  settings: ServerConnection.ISettings,
  path: string,
  kind: RuleKind
): Promise<void> {
  const query = URLExt.objectToQueryString({ path, kind });
  await requestAPI(`policies${query}`, { method: 'DELETE' }, settings);
}

/**
 * The pending approvals; the call also tells the server a lab is open.
 */
export async function listApprovals(
  settings: ServerConnection.ISettings
): Promise<IApproval[]> {
  const response = await requestAPI('approvals', { method: 'GET' }, settings);
  return parseApprovals(await response.json());
}

/**
 * The pending approvals and their version, the server holding the request up to `wait`
 * seconds while the version is `since` (a long poll); a held request tells the server a lab
 * is open.
 */
export async function watchApprovals(
  settings: ServerConnection.ISettings,
  query: IApprovalWatchQuery
): Promise<IApprovalList> {
  const params: Record<string, string> = { wait: String(query.wait) };
  if (query.since !== null) {
    params.since = String(query.since);
  }
  const response = await requestAPI(
    `approvals${URLExt.objectToQueryString(params)}`,
    { method: 'GET', signal: query.signal },
    settings
  );
  const body: unknown = await response.json();
  return {
    approvals: parseApprovals(body),
    version: parseApprovalsVersion(body)
  };
}

/**
 * Answer an approval; the first answer of any lab counts (a later one is a 409).
 *
 * @throws {XcshResponseError} 409 when already answered or expired; 404 for an unknown id.
 */
export async function answerApproval(
  settings: ServerConnection.ISettings,
  id: string,
  decision: ApprovalDecision,
  reason?: string
): Promise<IApproval | null> {
  const body: Record<string, string> = { decision };
  if (reason) {
    body.reason = reason;
  }
  const response = await requestAPI(
    `approvals/${encodeURIComponent(id)}`,
    {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body)
    },
    settings
  );
  const answer = (await response.json()) as { approval?: unknown };
  return parseApproval(answer.approval);
}

/**
 * The policy and approval endpoints, bound to one server (what the lab's views call).
 */
export interface IPolicyAPI {
  getPolicy(path: string): Promise<IPolicy>;
  setPolicy(request: PolicyRequest): Promise<IPolicy>;
  deletePolicy(path: string, kind: RuleKind): Promise<void>;
  listApprovals(): Promise<IApproval[]>;
  watchApprovals(query: IApprovalWatchQuery): Promise<IApprovalList>;
  answerApproval(
    id: string,
    decision: ApprovalDecision,
    reason?: string
  ): Promise<IApproval | null>;
}

/**
 * The endpoints bound to `settings`.
 */
export function policyAPI(settings: ServerConnection.ISettings): IPolicyAPI {
  return {
    getPolicy: path => getPolicy(settings, path),
    setPolicy: request => setPolicy(settings, request),
    deletePolicy: (path, kind) => deletePolicy(settings, path, kind),
    listApprovals: () => listApprovals(settings),
    watchApprovals: query => watchApprovals(settings, query),
    answerApproval: (id, decision, reason) =>
      answerApproval(settings, id, decision, reason)
  };
}
