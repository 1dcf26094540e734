import { resourceArn, stackArn } from '@hearth/protocol';
import { signalTokenSubject, type SecretDeriver } from '../auth/secrets.ts';
import { presignV2Url, signTempUrl } from '@hearth/protocol/signing';
import type { DeploymentRow, ServerRow } from '../store/schema.ts';
import { placementOf } from './stacks.ts';

/** Temp URLs without an expiry of their own end when Heat's do: at the 32-bit epoch limit. */
export const TEMP_URL_NEVER = 2147483647;

/** What the URL builders need: where agents reach this server and how secrets are derived. */
export interface TransportContext {
  publicUrl: string;
  secrets: SecretDeriver;
}

/** Swift container names of hearth's emulated temp URLs (the object name is the credential's access key). */
export const TEMP_URL_CONTAINERS = { metadata: 'metadata', signals: 'signals' } as const;

/**
 * The path of an emulated Swift object: `/v1/swift/v1/AUTH_{project}/{container}/{access key}`,
 * then `/{action}` for a deployment's signal object (one per action, as its CFN_SIGNAL URL).
 */
export function tempUrlPath(projectId: string, container: string, accessKeyId: string, action?: string): string {
  return `/v1/swift/v1/AUTH_${encodeURIComponent(projectId)}/${container}/${accessKeyId}${action === undefined ? '' : `/${action}`}`;
}

/** A signed temp URL for one method on a credential's object (`action`: see tempUrlPath; default none). */
export function tempUrl(
  ctx: TransportContext,
  method: 'GET' | 'PUT',
  projectId: string,
  container: string,
  accessKeyId: string,
  action?: string,
): string {
  const path = tempUrlPath(projectId, container, accessKeyId, action);
  const expires = TEMP_URL_NEVER;
  const sig = signTempUrl({ method, path, expires, key: ctx.secrets.tempUrlKey(accessKeyId) });
  return `${ctx.publicUrl}${path}?temp_url_sig=${sig}&temp_url_expires=${expires}`;
}

/** A Heat-style pre-signed CFN URL (`/v1/signal/{arn}` or `/v1/waitcondition/{arn}`) for a credential. */
export function cfnSignedUrl(
  ctx: TransportContext,
  kind: 'signal' | 'waitcondition',
  arn: string,
  accessKeyId: string,
  timestamp: Date,
): string {
  return presignV2Url({
    method: kind === 'signal' ? 'POST' : 'PUT',
    baseUrl: `${ctx.publicUrl}/v1/${kind}`,
    arn,
    accessKeyId,
    secret: ctx.secrets.agentSecret(accessKeyId),
    timestamp,
  });
}

/** The ARN of a server or deployment row (its stack's, or its pseudo-stack's). */
export function rowArn(row: ServerRow | DeploymentRow, kind: 'server' | 'deployment'): string {
  const p = placementOf(row, kind);
  return resourceArn(row.project_id, p.stackName, p.stackId, p.resourceName);
}

/**
 * The `os-collect-config` key Heat writes into a server's metadata for its transport
 * (reference/server.md §4.1). The same settings, as ini text, make /etc/os-collect-config.conf.
 */
export function collectorConfig(ctx: TransportContext, row: ServerRow): Record<string, unknown> {
  const p = placementOf(row, 'server');
  const secret = ctx.secrets.agentSecret(row.access_key_id);
  switch (row.config_transport) {
    case 'POLL_SERVER_CFN':
      return {
        collectors: ['cfn'],
        cfn: {
          metadata_url: `${ctx.publicUrl}/v1/`,
          access_key_id: row.access_key_id,
          secret_access_key: secret,
          // A pseudo-stack's name is shared, so name it by ARN (DescribeStackResource takes either).
          stack_name: row.stack_id === null ? stackArn(row.project_id, p.stackName, p.stackId) : p.stackName,
          path: `${p.resourceName}.Metadata`,
        },
      };
    case 'POLL_SERVER_HEAT':
      return {
        collectors: ['heat'],
        heat: {
          user_id: row.access_key_id,
          password: secret,
          auth_url: `${ctx.publicUrl}/v3`,
          project_id: row.project_id,
          stack_id: `${p.stackName}/${p.stackId}`,
          resource_name: p.resourceName,
        },
      };
    case 'POLL_TEMP_URL':
      return {
        collectors: ['request'],
        request: { metadata_url: tempUrl(ctx, 'GET', row.project_id, TEMP_URL_CONTAINERS.metadata, row.access_key_id) },
      };
    default:
      return {
        collectors: ['hearth'],
        hearth: {
          metadata_url: `${ctx.publicUrl}/v1/guest/metadata`,
          server_id: row.id,
          access_key_id: row.access_key_id,
          secret_access_key: secret,
        },
      };
  }
}

/** oslo.config interpolates `$name`: a literal dollar is written `$$`. */
function iniValue(value: unknown): string {
  return String(value).replaceAll('$', '$$$$');
}

/** `/etc/os-collect-config.conf` for a collector config: `[DEFAULT]` with the collectors, then each collector's section. */
export function collectorConfText(config: Record<string, unknown>): string {
  const collectors = (config.collectors as string[] | undefined) ?? [];
  const lines = ['[DEFAULT]', 'command = os-refresh-config', ...collectors.map((c) => `collectors = ${c}`)];
  for (const name of collectors) {
    const section = config[name];
    if (section === null || typeof section !== 'object') continue;
    lines.push('', `[${name}]`);
    for (const [key, value] of Object.entries(section)) lines.push(`${key} = ${iniValue(value)}`);
  }
  return lines.join('\n') + '\n';
}

/**
 * The transport-specific `deploy_*` inputs of a deployment (reference/server.md §4.2), in Heat's
 * order, after `deploy_stack_id`/`deploy_resource_name`.
 */
export function deploymentSignalInputs(ctx: TransportContext, row: DeploymentRow): Array<[string, string]> {
  const ak = row.access_key_id;
  switch (row.signal_transport) {
    case 'HEARTH_SIGNAL': {
      // Bound to its key: none, until its server's delete detaches it and a return attaches it with one.
      const token = ctx.secrets.deploymentSignalToken(signalTokenSubject(row.id, row.derived_config_id, ak));
      return [
        [
          'deploy_signal_id',
          `${ctx.publicUrl}/v1/guest/deployments/${row.id}/signal?action=${row.derived_config_id}${ak === null ? '' : `&key=${ak}`}&token=${token}`,
        ],
        ['deploy_signal_verb', 'POST'],
      ];
    }
    case 'CFN_SIGNAL':
      return ak === null
        ? []
        : [
            ['deploy_signal_id', cfnSignedUrl(ctx, 'signal', rowArn(row, 'deployment'), ak, new Date(row.derived_at))],
            ['deploy_signal_verb', 'POST'],
          ];
    case 'TEMP_URL_SIGNAL':
      return ak === null
        ? []
        : [
            // Signed for this action: a signal still queued for an earlier one must not settle it.
            ['deploy_signal_id', tempUrl(ctx, 'PUT', row.project_id, TEMP_URL_CONTAINERS.signals, ak, row.derived_config_id)],
            ['deploy_signal_verb', 'PUT'],
          ];
    case 'HEAT_SIGNAL': {
      if (ak === null) return [];
      const p = placementOf(row, 'deployment');
      return [
        ['deploy_auth_url', `${ctx.publicUrl}/v3`],
        ['deploy_username', `${p.stackName}-${p.resourceName}-${row.id.slice(0, 8)}`],
        ['deploy_user_id', ak],
        ['deploy_password', ctx.secrets.agentSecret(ak)],
        ['deploy_project_id', row.project_id],
      ];
    }
    default:
      return [];
  }
}
