/*
 * Copyright (c) jupyter-xcsh contributors.
 * Distributed under the terms of the Modified BSD License.
 */

/**
 * Checking what the server sends about policies and approvals (pure: no DOM, no I/O).
 *
 * Everything from the event bus or an answer is untrusted: a malformed approval is dropped,
 * long strings are cut, and nothing here throws.
 */

import { APPROVAL_EVENT_V1_ID } from '../events.generated';
import {
  type ApprovalEventKind,
  type Decision,
  type IApproval,
  type IApprovalEvent,
  type IPolicy,
  type IPolicyRule,
  type PolicyClass,
  type PolicyClasses,
  type PresetOrCustom,
  POLICY_CLASSES
} from './types';

/**
 * The schema id of approval events.
 */
export const APPROVAL_SCHEMA_ID = APPROVAL_EVENT_V1_ID;

/**
 * Bounds applied while parsing.
 */
export namespace ApprovalLimits {
  /** Longest id, name, path or one-line summary kept. */
  export const NAME_CHARS = 1024;
  /** Longest diff, code or reason kept. */
  export const TEXT_CHARS = 256 * 1024;
  /** Most cell ids kept. */
  export const MAX_CELLS = 1000;
}

const KINDS: readonly ApprovalEventKind[] = [
  'asked',
  'answered',
  'expired',
  'refused'
];

/**
 * An approval as the server sent it, or `null` when it lacks what the lab needs (an id).
 */
export function parseApproval(value: unknown): IApproval | null {
  if (!isRecord(value)) {
    return null;
  }
  const id = name(value.id);
  if (!id) {
    return null;
  }
  const detail = isRecord(value.detail) ? value.detail : {};
  const cellIds = Array.isArray(value.cellIds)
    ? value.cellIds
        .slice(0, ApprovalLimits.MAX_CELLS)
        .filter((c): c is string => typeof c === 'string')
        .map(c => c.slice(0, ApprovalLimits.NAME_CHARS))
    : [];
  const cls = POLICY_CLASSES.find(c => c === value.class) ?? 'edit';
  return {
    id,
    agent: name(value.agent) ?? '',
    tool: name(value.tool) ?? '',
    class: cls,
    summary: name(value.summary) ?? '',
    path: name(value.path) ?? '',
    cellIds,
    detail: {
      ...optional('diff', text(detail.diff)),
      ...optional('code', text(detail.code)),
      ...optional('file', name(detail.file))
    },
    askedAt: name(value.askedAt) ?? '',
    expiresAt: name(value.expiresAt) ?? ''
  };
}

/**
 * The approval event of one emission of the event bus (or one event of the activity
 * history), or `null` for another schema or a malformed payload.
 */
export function parseApprovalEmission(
  emission: unknown
): IApprovalEvent | null {
  try {
    if (!isRecord(emission) || emission.schema_id !== APPROVAL_SCHEMA_ID) {
      return null;
    }
    const kind = KINDS.find(k => k === emission.kind);
    const approval = parseApproval(emission.approval);
    if (kind === undefined || approval === null) {
      return null;
    }
    return {
      kind,
      approval,
      decision: name(emission.decision),
      reason: text(emission.reason),
      time: timestamp(emission.__timestamp__)
    };
  } catch {
    // A getter that throws is as malformed as anything else.
    return null;
  }
}

/**
 * The version of a `GET /api/xcsh/approvals` answer, or `null` when it has none (a server
 * without long polls) or it is not a whole number a JSON number holds exactly.
 */
export function parseApprovalsVersion(body: unknown): number | null {
  const version = isRecord(body) ? body.version : null;
  return Number.isSafeInteger(version) && (version as number) >= 0
    ? (version as number)
    : null;
}

/**
 * The pending approvals of a `GET /api/xcsh/approvals` answer.
 */
export function parseApprovals(body: unknown): IApproval[] {
  const list = isRecord(body) ? body.approvals : null;
  if (!Array.isArray(list)) {
    return [];
  }
  return list.map(parseApproval).filter((a): a is IApproval => a !== null);
}

/**
 * A policy answer (`GET`/`PUT /api/xcsh/policies`), unknown decisions read as `allow` (the
 * default) and unknown rules dropped.
 */
export function parsePolicy(body: unknown): IPolicy {
  const fields = isRecord(body) ? body : {};
  const effective = decisions(fields.effective);
  const rules = Array.isArray(fields.rules)
    ? fields.rules.map(parseRule).filter((r): r is IPolicyRule => r !== null)
    : [];
  const preset = (
    ['full', 'ask-changes', 'ask-running', 'read-only', 'custom'] as const
  ).find(p => p === fields.preset);
  return {
    path: name(fields.path) ?? '',
    effective: Object.fromEntries(
      POLICY_CLASSES.map(c => [c, effective[c] ?? 'allow'])
    ) as Record<PolicyClass, Decision>,
    preset: preset ?? ('custom' as PresetOrCustom),
    rules
  };
}

function parseRule(value: unknown): IPolicyRule | null {
  if (!isRecord(value)) {
    return null;
  }
  const path = name(value.path);
  const kind = value.kind === 'folder' ? 'folder' : 'notebook';
  const source = value.source === 'operator' ? 'operator' : 'person';
  return path === null
    ? null
    : { path, kind, classes: decisions(value.classes), source };
}

function decisions(value: unknown): PolicyClasses {
  const classes: PolicyClasses = {};
  if (isRecord(value)) {
    for (const cls of POLICY_CLASSES) {
      const decision = value[cls];
      if (decision === 'allow' || decision === 'ask' || decision === 'deny') {
        classes[cls] = decision;
      }
    }
  }
  return classes;
}

function optional<K extends string>(
  key: K,
  value: string | null
): Partial<Record<K, string>> {
  return value === null ? {} : ({ [key]: value } as Record<K, string>);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function name(value: unknown): string | null {
  return typeof value === 'string'
    ? value.slice(0, ApprovalLimits.NAME_CHARS)
    : null;
}

function text(value: unknown): string | null {
  return typeof value === 'string'
    ? value.slice(0, ApprovalLimits.TEXT_CHARS)
    : null;
}

function timestamp(value: unknown): number {
  const ms = typeof value === 'string' ? Date.parse(value) : NaN;
  return Number.isFinite(ms) ? ms : Date.now();
}
