/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The wire shapes of agent policies and approvals (`/api/xcsh/policies`,
 * `/api/xcsh/approvals` and the approval events), as the lab reads them.
 */

/**
 * A class of agent action a policy decides on.
 */
export type PolicyClass = 'read' | 'edit' | 'run' | 'python' | 'destructive';

/**
 * Every class, in the order the lab lists them.
 */
export const POLICY_CLASSES: readonly PolicyClass[] = [
  'read',
  'edit',
  'run',
  'python',
  'destructive'
];

/**
 * What a policy decides for a class.
 */
export type Decision = 'allow' | 'ask' | 'deny';

/**
 * A named set of decisions: the lab's "Agent access" choices.
 */
export type Preset = 'full' | 'ask-changes' | 'ask-running' | 'read-only';

/**
 * What a policy answer says the effective decisions are: a preset or `custom`.
 */
export type PresetOrCustom = Preset | 'custom';

/**
 * The decision of each class.
 */
export type PolicyClasses = Partial<Record<PolicyClass, Decision>>;

/**
 * What a rule covers: one notebook, or a folder and everything under it.
 */
export type RuleKind = 'notebook' | 'folder';

/**
 * One rule matching a path, and who set it.
 */
export interface IPolicyRule {
  /** The api path or glob the rule covers. */
  path: string;
  kind: RuleKind;
  classes: PolicyClasses;
  /** `operator`: the server's configuration; `person`: set in the lab. */
  source: 'operator' | 'person';
}

/**
 * The policy of a path (`GET /api/xcsh/policies?path=`).
 */
export interface IPolicy {
  path: string;
  /** The decision of each class for an agent acting on the path. */
  effective: Record<PolicyClass, Decision>;
  preset: PresetOrCustom;
  /** The rules that match the path. */
  rules: IPolicyRule[];
}

/**
 * A person's rule to set (`PUT /api/xcsh/policies`).
 */
export type PolicyRequest =
  | { path: string; kind: RuleKind; preset: Preset }
  | { path: string; kind: RuleKind; classes: PolicyClasses };

/**
 * What an approval request shows of what would change.
 */
export interface IApprovalDetail {
  /** A unified diff of the change. */
  diff?: string;
  /** The code that would run. */
  code?: string;
  /** The file that would change (an api path). */
  file?: string;
}

/**
 * An agent's action waiting for the person's answer.
 */
export interface IApproval {
  id: string;
  /** The agent, named as in the activity panel. */
  agent: string;
  /** The tool called: `notebook`, `python`, `files`, `kernel`, ... */
  tool: string;
  class: PolicyClass;
  /** One line saying what the agent would do. */
  summary: string;
  /** The notebook or file acted on. */
  path: string;
  cellIds: string[];
  detail: IApprovalDetail;
  /** ISO times. */
  askedAt: string;
  expiresAt: string;
}

/**
 * The person's answer to an approval request.
 */
export type ApprovalDecision = 'allow-once' | 'allow-notebook' | 'deny';

/**
 * What an approval event says happened.
 */
export type ApprovalEventKind = 'asked' | 'answered' | 'expired' | 'refused';

/**
 * An approval event (the event bus, or the activity history).
 */
export interface IApprovalEvent {
  kind: ApprovalEventKind;
  approval: IApproval;
  /** The answer, for `answered`. */
  decision: string | null;
  /** The person's reason of a deny, or why a call was refused. */
  reason: string | null;
  /** When the server emitted it (ms since the epoch). */
  time: number;
}
