import { hash } from 'node:crypto';
import { heatTime, type SoftwareDeployment } from '@hearth/protocol';
import type { DeploymentRow, NewEvent } from '../store/schema.ts';
import { resourceEvent } from './events.ts';

/** Transports whose agent signals with a credential of this deployment alone (its `access_key_id`). */
export const CREDENTIAL_TRANSPORTS: ReadonlySet<string> = new Set(['CFN_SIGNAL', 'HEAT_SIGNAL', 'TEMP_URL_SIGNAL']);

/** Heat time of an ISO timestamp, or null. */
export function heatTimeOrNull(iso: string | null): string | null {
  return iso ? heatTime(new Date(iso)) : null;
}

/** Turns a deployment row into the API shape (Heat's keys first, then hearth's). */
export function deploymentFromRow(row: DeploymentRow): SoftwareDeployment {
  const deployment: SoftwareDeployment = {
    id: row.id,
    config_id: row.config_id,
    server_id: row.server_id,
    input_values: JSON.parse(row.input_values) as Record<string, unknown>,
    output_values: row.output_values === null ? null : (JSON.parse(row.output_values) as Record<string, unknown>),
    action: row.action,
    status: row.status,
    status_reason: row.status_reason,
    creation_time: heatTime(new Date(row.created_at)),
    name: row.name,
    derived_config_id: row.derived_config_id,
    signal_transport: row.signal_transport,
    timeout: row.timeout_s,
    deadline: heatTimeOrNull(row.deadline_at),
    fetched_time: heatTimeOrNull(row.fetched_at),
    last_heartbeat_time: heatTimeOrNull(row.last_heartbeat_at),
  };
  if (row.updated_at) deployment.updated_time = heatTime(new Date(row.updated_at));
  return deployment;
}

/**
 * The strong entity tag of a deployment as the operator API shows it: a digest of its whole
 * representation, so any change an operator could see (a signal, a heartbeat's deadline, an
 * update) gives a new tag. `PUT` with `If-Match` compares it inside the write transaction.
 */
export function deploymentETag(deployment: SoftwareDeployment): string {
  return `"${hash('sha256', JSON.stringify(deployment), 'base64url').slice(0, 27)}"`;
}

/** An event about a deployment (its timeline is the events with its id). */
export function deploymentEvent(
  row: Pick<DeploymentRow, 'id' | 'project_id' | 'server_id'>,
  type: string,
  message: string,
  data: Record<string, unknown> = {},
): Omit<NewEvent, 'time'> {
  const resource = { project_id: row.project_id, resource_type: 'software_deployment', resource_id: row.id, server_id: row.server_id };
  return resourceEvent(resource, type, message, data);
}

/** The deadline `seconds` after an ISO time. */
export function deadlineAfter(iso: string, seconds: number): string {
  return new Date(Date.parse(iso) + seconds * 1000).toISOString();
}
