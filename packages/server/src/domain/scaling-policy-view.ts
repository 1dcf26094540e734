// A scaling policy as the native API shows it: its alarm URL (CFN pre-signed), signal URL and token, while not revoked.
import { heatTime, resourceArn, type AdjustmentType, type ScalingPolicy } from '@hearth/protocol';
import type { StackRow } from '../store/schema.ts';
import type { ScalingPolicyRow } from '../store/schema-scaling.ts';
import { issueToken } from '../auth/keystone-token.ts';
import { cfnSignedUrl, type TransportContext } from './transports.ts';

/** Far-future expiry of signal tokens that have no expiry of their own. */
const NEVER = new Date('2100-01-01T00:00:00Z');

/** The native API shape: the alarm URL (CFN pre-signed), the signal URL and token, unless revoked. */
export function policyView(ctx: TransportContext, row: ScalingPolicyRow, stack: StackRow, groupName: string): ScalingPolicy {
  const arn = resourceArn(row.project_id, stack.name, stack.id, row.name);
  const ak = row.access_key_id;
  return {
    id: row.id,
    name: row.name,
    group: groupName,
    stack_id: stack.id,
    stack_name: stack.name,
    arn,
    adjustment_type: row.adjustment_type as AdjustmentType,
    scaling_adjustment: row.scaling_adjustment,
    min_adjustment_step: row.min_adjustment_step,
    cooldown: row.cooldown_s,
    act_only_on_alarm: row.act_only_on_alarm === 1,
    alarm_url: ak === null ? null : cfnSignedUrl(ctx, 'signal', arn, ak, new Date(row.key_issued_at)),
    signal_url: ak === null ? null : `${ctx.publicUrl}/v1/${row.project_id}/stacks/${stack.name}/${stack.id}/resources/${row.name}/signal`,
    signal_token:
      ak === null
        ? null
        : issueToken({
            accessKeyId: ak,
            projectId: row.project_id,
            expiresAt: row.urls_expire_at ? new Date(row.urls_expire_at) : NEVER,
            key: ctx.secrets.tokenKey(),
          }),
    expires_at: ak === null || row.urls_expire_at === null ? null : heatTime(new Date(row.urls_expire_at)),
    revoked: ak === null,
    last_signal:
      row.last_signal_at === null
        ? null
        : { time: heatTime(new Date(row.last_signal_at)), outcome: row.last_signal_outcome ?? '', reason: row.last_signal_reason ?? '' },
    creation_time: heatTime(new Date(row.created_at)),
  };
}
