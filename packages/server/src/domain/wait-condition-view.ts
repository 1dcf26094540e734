import { heatTime, resourceArn, type WaitCondition } from '@hearth/protocol';
import type { StackRow, WaitConditionRow, WaitConditionSignalRow } from '../store/schema.ts';
import { issueToken } from '../auth/keystone-token.ts';
import { cfnSignedUrl, type TransportContext } from './transports.ts';

/** Far-future expiry of handle tokens that have no expiry of their own. */
const NEVER = new Date('2100-01-01T00:00:00Z');

/** A wait condition in the native API's shape, with every handle form Heat offers. */
export function waitConditionView(
  ctx: TransportContext,
  row: WaitConditionRow,
  stack: StackRow,
  signals: WaitConditionSignalRow[],
): WaitCondition {
  const arn = resourceArn(row.project_id, stack.name, stack.id, row.name);
  const created = new Date(row.created_at);
  const endpoint = `${ctx.publicUrl}/v1/${row.project_id}/stacks/${stack.name}/${stack.id}/resources/${row.name}/signal`;
  const token = issueToken({
    accessKeyId: row.access_key_id,
    projectId: row.project_id,
    expiresAt: row.urls_expire_at ? new Date(row.urls_expire_at) : NEVER,
    key: ctx.secrets.tokenKey(),
  });
  const parsed = signals.map((s) => ({
    id: s.signal_id,
    status: s.status as 'SUCCESS' | 'FAILURE',
    reason: s.reason,
    data: JSON.parse(s.data) as unknown,
    time: heatTime(new Date(s.received_at)),
  }));
  const successes = parsed.filter((s) => s.status === 'SUCCESS').length;
  return {
    name: row.name,
    stack_id: stack.id,
    stack_name: stack.name,
    arn,
    count: row.count,
    timeout: row.timeout_s,
    max_failures: row.max_failures ?? 0,
    min_success_percent: row.min_success_percent,
    status: row.status as WaitCondition['status'],
    status_reason: row.status_reason,
    received: parsed.length,
    successes,
    failures: parsed.length - successes,
    data: Object.fromEntries(parsed.map((s) => [s.id, s.data])),
    signals: parsed,
    deadline: heatTime(new Date(row.deadline_at)),
    creation_time: heatTime(created),
    updated_time: row.updated_at ? heatTime(new Date(row.updated_at)) : null,
    handle: {
      cfn_url: cfnSignedUrl(ctx, 'waitcondition', arn, row.access_key_id, created),
      endpoint,
      token,
      curl_cli: `curl -i -X POST -H 'X-Auth-Token: ${token}' -H 'Content-Type: application/json' -H 'Accept: application/json' ${endpoint}`,
      signal_url: cfnSignedUrl(ctx, 'signal', arn, row.access_key_id, created),
      expires_at: row.urls_expire_at ? heatTime(new Date(row.urls_expire_at)) : null,
    },
  };
}
