/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * The wire shapes of agent policies and approvals (`/api/xcsh/policies`,
 * `/api/xcsh/approvals` and the approval events), as the lab reads them: taken from
 * `rest-api.yml` (`restapi.generated.ts`) and the approval event schema (`events.generated.ts`).
 */

import type { ApprovalEventV1 } from '../events.generated';
import type { components } from '../restapi.generated';

type Schemas = components['schemas'];

/**
 * A class of agent action a policy decides on.
 */
export type PolicyClass = keyof Schemas['PolicyClasses'];

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
export type Decision = Schemas['PolicyDecision'];

/**
 * A named set of decisions: the lab's "Agent access" choices.
 */
export type Preset = Schemas['PolicyPreset'];

/**
 * What a policy answer says the effective decisions are: a preset or `custom`.
 */
export type PresetOrCustom = Schemas['Policy']['preset'];

/**
 * The decision of each class.
 */
export type PolicyClasses = Schemas['PolicyClasses'];

/**
 * What a rule covers: one notebook, or a folder and everything under it.
 */
export type RuleKind = Schemas['PolicyRule']['kind'];

/**
 * One rule matching a path, and who set it (`operator`: the server's configuration;
 * `person`: set in the lab).
 */
export type IPolicyRule = Schemas['PolicyRule'];

/**
 * The policy of a path (`GET /api/xcsh/policies?path=`): the decision of each class for an
 * agent acting on the path, and the rules that match it.
 */
export interface IPolicy extends Omit<Schemas['Policy'], 'effective'> {
  effective: Record<PolicyClass, Decision>;
}

/**
 * A person's rule to set (`PUT /api/xcsh/policies`): a preset, or each class.
 */
export type PolicyRequest =
  | { path: string; kind: RuleKind; preset: Preset }
  | { path: string; kind: RuleKind; classes: PolicyClasses };

/**
 * What an approval request shows of what would change: a unified diff, the code that would
 * run, the file that would change.
 */
export type IApprovalDetail = Schemas['Approval']['detail'];

/**
 * An agent's action waiting for the person's answer (`tool` kept as any name: a newer
 * server's tool is shown too).
 */
export interface IApproval extends Omit<Schemas['Approval'], 'tool'> {
  tool: string;
}

/**
 * The person's answer to an approval request.
 */
export type ApprovalDecision = Schemas['ApprovalAnswer']['decision'];

/**
 * What an approval event says happened.
 */
export type ApprovalEventKind = ApprovalEventV1['kind'];

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
