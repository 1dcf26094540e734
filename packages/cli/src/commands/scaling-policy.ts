import type { ScalingPolicy, ScalingPolicyCreate, ScalingSignalResult } from '@hearth/protocol';
import type { Command } from 'commander';
import { usageError } from '../errors.ts';
import { parseChoice, parseSeconds } from '../flag-values.ts';
import { formatFields } from '../output.ts';
import { addExamples, SCALING_POLICY_EXAMPLES } from '../help-examples.ts';
import { openSession, type CliDeps } from '../session.ts';
import {
  ADJUSTMENT_TYPES,
  checkScalingName,
  MAX_SCALING_COOLDOWN,
  MAX_SCALING_GROUP_SIZE,
  parseInteger,
  scalingClient,
} from './scaling-client.ts';

/** Longest URL lifetime (protocol ScalingPolicyCreate.url_expires_in: ten years). */
const MAX_URL_EXPIRES_IN = 10 * 365 * 24 * 3600;

/** The flags of `scaling-policy create`. */
export interface ScalingPolicyCreateFlags {
  stack: string;
  group: string;
  adjustmentType: string;
  adjustment: string;
  minStep?: string | undefined;
  cooldown?: string | undefined;
  actOnlyOnAlarm?: boolean | undefined;
  urlExpiresIn?: string | undefined;
}

/** Turns `scaling-policy create` flags into the POST .../scaling_policies body; min step only with the percent type (Heat). */
export function buildScalingPolicyCreate(name: string, flags: ScalingPolicyCreateFlags): ScalingPolicyCreate {
  const limit = MAX_SCALING_GROUP_SIZE * 100;
  const body: ScalingPolicyCreate = {
    name: checkScalingName('scaling policy', name),
    group: checkScalingName('scaling group', flags.group),
    adjustment_type: parseChoice(flags.adjustmentType, '--adjustment-type', ADJUSTMENT_TYPES),
    scaling_adjustment: parseInteger(flags.adjustment, '--adjustment', -limit, limit),
  };
  if (flags.minStep !== undefined) {
    if (body.adjustment_type !== 'percent_change_in_capacity')
      throw usageError('--min-step is allowed only with --adjustment-type percent_change_in_capacity');
    body.min_adjustment_step = parseInteger(flags.minStep, '--min-step', 0, MAX_SCALING_GROUP_SIZE);
  }
  if (flags.cooldown !== undefined)
    body.cooldown = flags.cooldown.trim() === '0' ? 0 : parseSeconds(flags.cooldown, '--cooldown', MAX_SCALING_COOLDOWN);
  if (flags.actOnlyOnAlarm) body.act_only_on_alarm = true;
  if (flags.urlExpiresIn !== undefined) body.url_expires_in = parseSeconds(flags.urlExpiresIn, '--url-expires-in', MAX_URL_EXPIRES_IN);
  return body;
}

/** Parses `--data` of `scaling-policy signal`: JSON if it parses, else the text as a plain signal. */
export function signalPayload(data: string | undefined): unknown {
  if (data === undefined) return undefined;
  try {
    return JSON.parse(data) as unknown;
  } catch {
    return data;
  }
}

/** Human text of one policy, its alarm URL first (what an alarm service needs). */
export function formatScalingPolicy(policy: ScalingPolicy): string {
  return formatFields([
    ['name', policy.name],
    ['group', policy.group],
    ['stack_name', policy.stack_name],
    [
      'adjustment',
      `${policy.adjustment_type} ${policy.scaling_adjustment}${policy.min_adjustment_step ? ` (min step ${policy.min_adjustment_step})` : ''}`,
    ],
    ['cooldown', policy.cooldown],
    ['act_only_on_alarm', policy.act_only_on_alarm],
    ['alarm_url', policy.revoked ? '(revoked: rotate to issue a new one)' : policy.alarm_url],
    ['signal_url', policy.signal_url],
    ['signal_token', policy.signal_token],
    ['expires_at', policy.expires_at],
    [
      'last_signal',
      policy.last_signal === null ? null : `${policy.last_signal.time} ${policy.last_signal.outcome}: ${policy.last_signal.reason}`,
    ],
    ['arn', policy.arn],
  ]);
}

function formatResult(result: ScalingSignalResult): string {
  return formatFields([
    ['outcome', result.outcome],
    ['capacity', `${result.previous_capacity} -> ${result.desired_capacity}`],
    ['reason', result.reason],
  ]);
}

/** Registers `hearth scaling-policy create|show|list|delete|signal|rotate|revoke`. */
export function registerScalingPolicyCommands(program: Command, deps: CliDeps): void {
  const policy = program
    .command('scaling-policy')
    .description("scaling policies: Heat's adjustments, triggered by an alarm service through the policy's alarm_url");
  addExamples(policy, SCALING_POLICY_EXAMPLES);
  const named = (command: Command) => command.argument('<name>', 'policy name').requiredOption('--stack <stack>', 'stack name or id');

  policy
    .command('create')
    .description('create a policy on a group; prints its alarm_url (give it to Aodh or Alertmanager as the webhook)')
    .argument('<name>', "policy name: letters, digits, '_', '.', ':' or '-'")
    .requiredOption('--stack <stack>', 'stack name or id')
    .requiredOption('--group <group>', 'the scaling group it adjusts')
    .requiredOption('--adjustment-type <type>', ADJUSTMENT_TYPES.join(', '))
    .requiredOption('--adjustment <n>', 'the count, capacity or percentage (negative to scale in)')
    .option('--min-step <n>', 'with percent_change_in_capacity: the smallest change')
    .option('--cooldown <seconds>', "cooldown after this policy's changes (default: the group's)")
    .option('--act-only-on-alarm', 'act only when the payload says alarm/firing (Heat acts on any signal)')
    .option('--url-expires-in <seconds>', 'the alarm URL and token stop working after this many seconds')
    .action(async (name: string, flags: ScalingPolicyCreateFlags, cmd: Command) => {
      const session = openSession(cmd, deps);
      const created = await scalingClient(session).createScalingPolicy(flags.stack, buildScalingPolicyCreate(name, flags));
      session.out.result({ scaling_policy: created }, () => formatScalingPolicy(created));
    });

  policy
    .command('list')
    .description("list a stack's scaling policies")
    .requiredOption('--stack <stack>', 'stack name or id')
    .action(async (flags: { stack: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const policies = await scalingClient(session).listScalingPolicies(flags.stack);
      session.out.list<ScalingPolicy>(
        { scaling_policies: policies },
        [
          { header: 'name', value: (p) => p.name },
          { header: 'group', value: (p) => p.group },
          { header: 'adjustment', value: (p) => `${p.adjustment_type} ${p.scaling_adjustment}` },
          { header: 'last_signal', value: (p) => p.last_signal?.outcome ?? null },
          { header: 'alarm_url', value: (p) => (p.revoked ? '(revoked)' : p.alarm_url) },
        ],
        policies,
        `no scaling policies in stack ${flags.stack}`,
      );
    });

  named(policy.command('show').description('show one policy with its alarm_url, signal_url and last signal')).action(
    async (name: string, flags: { stack: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const found = await scalingClient(session).getScalingPolicy(flags.stack, name);
      session.out.result({ scaling_policy: found }, () => formatScalingPolicy(found));
    },
  );

  named(policy.command('delete').description('delete a policy; its alarm URL stops working')).action(
    async (name: string, flags: { stack: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      await scalingClient(session).deleteScalingPolicy(flags.stack, name);
      session.out.result({ deleted: true, stack: flags.stack, name }, () => `deleted scaling policy ${name} of stack ${flags.stack}\n`);
    },
  );

  named(policy.command('signal').description('signal a policy by hand; prints what it did (adjusted, cooldown, no_change, …)'))
    .option('--data <json-or-text>', 'an alarm payload (Aodh or Alertmanager JSON) or a plain reason')
    .action(async (name: string, flags: { stack: string; data?: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const result = await scalingClient(session).signalScalingPolicy(flags.stack, name, signalPayload(flags.data));
      session.out.result({ result }, () => formatResult(result));
    });

  named(policy.command('rotate').description('issue a new alarm_url and token; the old ones stop at once'))
    .option('--url-expires-in <seconds>', 'the new URL and token stop working after this many seconds')
    .action(async (name: string, flags: { stack: string; urlExpiresIn?: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const body =
        flags.urlExpiresIn === undefined
          ? {}
          : { url_expires_in: parseSeconds(flags.urlExpiresIn, '--url-expires-in', MAX_URL_EXPIRES_IN) };
      const rotated = await scalingClient(session).rotateScalingPolicy(flags.stack, name, body);
      session.out.result({ scaling_policy: rotated }, () => formatScalingPolicy(rotated));
    });

  named(policy.command('revoke').description('revoke the alarm_url and token (rotate issues new ones)')).action(
    async (name: string, flags: { stack: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const revoked = await scalingClient(session).revokeScalingPolicy(flags.stack, name);
      session.out.result({ scaling_policy: revoked }, () => formatScalingPolicy(revoked));
    },
  );
}
