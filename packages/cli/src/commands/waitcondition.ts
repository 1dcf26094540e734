import type { WaitCondition, WaitConditionCreate, WaitConditionHandle, WaitConditionSignalRecord } from '@hearth/protocol';
import type { Command } from 'commander';
import { usageError } from '../errors.ts';
import { parseSeconds } from '../flag-values.ts';
import { formatFields, formatTable } from '../output.ts';
import { MAX_URL_EXPIRES_IN, MAX_WAIT_CONDITION_COUNT, MAX_WAIT_CONDITION_TIMEOUT, RESOURCE_NAME_PATTERN } from '../protocol-values.ts';
import { addExamples, WAITCONDITION_EXAMPLES } from '../help-examples.ts';
import { openSession, type CliDeps } from '../session.ts';
import { registerWaitConditionWaitCommand } from './waitcondition-wait.ts';

/** The flags of `waitcondition create` (commander hands values over as text). */
export interface WaitConditionCreateFlags {
  stack: string;
  count?: string | undefined;
  timeout: string;
  maxFailures?: string | undefined;
  minSuccessPercent?: string | undefined;
  urlExpiresIn?: string | undefined;
}

/** Parses a whole number in min..max for `flag`; throws a usage error naming the flag and value. */
export function parseWholeNumber(text: string, flag: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw usageError(`${flag} ${JSON.stringify(text)} is not a whole number from ${min} to ${max}`);
  }
  return value;
}

/** Checks a wait condition's name as the server will (letters, digits, `_ . : -`); throws a usage error. */
export function checkConditionName(name: string): string {
  if (!RESOURCE_NAME_PATTERN.test(name)) {
    throw usageError(
      `wait condition name ${JSON.stringify(name)} is not valid`,
      "use 1-255 letters, digits, '_', '.', ':' or '-' (no '/' or spaces)",
    );
  }
  return name;
}

/** Turns `waitcondition create` flags into the POST /stacks/{stack}/wait_conditions body. */
export function buildWaitConditionCreate(name: string, flags: WaitConditionCreateFlags): WaitConditionCreate {
  const body: WaitConditionCreate = {
    name: checkConditionName(name),
    timeout: parseSeconds(flags.timeout, '--timeout', MAX_WAIT_CONDITION_TIMEOUT),
  };
  if (flags.count !== undefined) body.count = parseWholeNumber(flags.count, '--count', 1, MAX_WAIT_CONDITION_COUNT);
  if (flags.maxFailures !== undefined) {
    body.max_failures = parseWholeNumber(flags.maxFailures, '--max-failures', 0, MAX_WAIT_CONDITION_COUNT);
  }
  if (flags.minSuccessPercent !== undefined) {
    body.min_success_percent = parseWholeNumber(flags.minSuccessPercent, '--min-success-percent', 0, 100);
  }
  if (flags.urlExpiresIn !== undefined) body.url_expires_in = parseSeconds(flags.urlExpiresIn, '--url-expires-in', MAX_URL_EXPIRES_IN);
  return body;
}

/** The `key: value` lines of a wait condition (without its handle). */
export function conditionFields(wc: WaitCondition): Array<[string, unknown]> {
  return [
    ['name', wc.name],
    ['stack_name', wc.stack_name],
    ['stack_id', wc.stack_id],
    ['status', wc.status],
    ['status_reason', wc.status_reason],
    ['received', `${wc.received}/${wc.count}`],
    ['successes', wc.successes],
    ['failures', wc.failures],
    ['max_failures', wc.max_failures],
    ['min_success_percent', wc.min_success_percent],
    ['timeout', wc.timeout],
    ['deadline', wc.deadline],
    ['creation_time', wc.creation_time],
    ['updated_time', wc.updated_time],
    ['arn', wc.arn],
  ];
}

/** The `key: value` lines of a handle: every way a VM can signal the condition. */
export function handleFields(handle: WaitConditionHandle): Array<[string, unknown]> {
  return [
    ['cfn_url', handle.cfn_url],
    ['endpoint', handle.endpoint],
    ['token', handle.token],
    ['curl_cli', handle.curl_cli],
    ['signal_url', handle.signal_url],
    ['expires_at', handle.expires_at],
  ];
}

/** Indents every non-empty line by two spaces. */
function indent(text: string): string {
  return text
    .split('\n')
    .map((line) => (line === '' ? line : `  ${line}`))
    .join('\n');
}

/** Human text of one wait condition: its fields, its signals as a table, then its handle. */
export function formatCondition(wc: WaitCondition): string {
  const signals =
    wc.signals.length === 0
      ? '-'
      : formatTable<WaitConditionSignalRecord>(
          [
            { header: 'id', value: (s) => s.id },
            { header: 'status', value: (s) => s.status },
            { header: 'time', value: (s) => s.time },
            { header: 'reason', value: (s) => s.reason },
            { header: 'data', value: (s) => s.data },
          ],
          wc.signals,
        );
  return (
    formatFields([...conditionFields(wc), ['signals', signals]]) +
    '\nhandle (how a VM signals it: PUT a CFN body to cfn_url, or POST a Heat body to endpoint with X-Auth-Token: token, or to signal_url):\n' +
    indent(formatFields(handleFields(wc.handle)))
  );
}

/** Registers `hearth waitcondition create|show|list|wait|delete`. */
export function registerWaitConditionCommands(program: Command, deps: CliDeps): void {
  const waitcondition = program
    .command('waitcondition')
    .description('wait conditions: wait in a script until VMs signal (count, timeout, failure policy)');
  addExamples(waitcondition, WAITCONDITION_EXAMPLES);

  waitcondition
    .command('create')
    .description('create a wait condition in a stack; prints its handle (URLs and token the VMs signal with)')
    .argument('<name>', "wait condition name: letters, digits, '_', '.', ':' or '-'")
    .requiredOption('--stack <stack>', 'stack name or id')
    .requiredOption('--timeout <seconds>', `seconds until the condition FAILS without enough signals (1-${MAX_WAIT_CONDITION_TIMEOUT})`)
    .option('--count <n>', `signals needed (1-${MAX_WAIT_CONDITION_COUNT}; default 1)`)
    .option('--max-failures <n>', 'FAILURE signals tolerated before the condition fails (default 0: the first fails it)')
    .option('--min-success-percent <p>', 'once --count signals arrived, succeed if at least this percent are SUCCESS (0-100)')
    .option(
      '--url-expires-in <seconds>',
      'the handle URLs stop working after this many seconds (default: they live as long as the condition)',
    )
    .action(async (name: string, flags: WaitConditionCreateFlags, cmd: Command) => {
      const session = openSession(cmd, deps);
      const created = await session.client().createWaitCondition(flags.stack, buildWaitConditionCreate(name, flags));
      session.out.result({ wait_condition: created }, () => formatCondition(created));
    });

  waitcondition
    .command('list')
    .description("list a stack's wait conditions")
    .requiredOption('--stack <stack>', 'stack name or id')
    .action(async (flags: { stack: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const conditions = await session.client().listWaitConditions(flags.stack);
      session.out.list<WaitCondition>(
        { wait_conditions: conditions },
        [
          { header: 'name', value: (wc) => wc.name },
          { header: 'status', value: (wc) => wc.status },
          { header: 'received', value: (wc) => `${wc.received}/${wc.count}` },
          { header: 'failures', value: (wc) => wc.failures },
          { header: 'deadline', value: (wc) => wc.deadline },
        ],
        conditions,
        `no wait conditions in stack ${flags.stack}`,
      );
    });

  waitcondition
    .command('show')
    .description('show one wait condition: status, signals, data and handle')
    .argument('<name>', 'wait condition name')
    .requiredOption('--stack <stack>', 'stack name or id')
    .action(async (name: string, flags: { stack: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const found = await session.client().getWaitCondition(flags.stack, name);
      session.out.result({ wait_condition: found }, () => formatCondition(found));
    });

  registerWaitConditionWaitCommand(waitcondition, deps);

  waitcondition
    .command('delete')
    .description('delete a wait condition and revoke its handle URLs')
    .argument('<name>', 'wait condition name')
    .requiredOption('--stack <stack>', 'stack name or id')
    .action(async (name: string, flags: { stack: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      await session.client().deleteWaitCondition(flags.stack, name);
      session.out.result({ deleted: true, stack: flags.stack, name }, () => `deleted wait condition ${name} of stack ${flags.stack}\n`);
    });
}
