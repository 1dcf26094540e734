import type { WaitCondition } from '@hearth/protocol';
import type { Command } from 'commander';
import { waitForCondition, type ConditionWaitResult } from '../condition-wait-loop.ts';
import { NO_REPLY_HINT } from '../deadline.ts';
import { EXIT, ExitError } from '../errors.ts';
import { parseSeconds } from '../flag-values.ts';
import { INTERRUPTED, untilInterrupted } from '../interrupt.ts';
import { formatFields } from '../output.ts';
import { ProgressLine } from '../progress-line.ts';
import { openSession, type CliDeps } from '../session.ts';
import { retryingStatus } from '../outage.ts';

/** The progress text: `2/3 received, 41 s elapsed`. */
export function conditionProgressText(received: number, count: number, elapsedMs: number): string {
  return `${received}/${count} received, ${Math.floor(elapsedMs / 1000)} s elapsed`;
}

/** The progress text before the server's first answer: `wait condition ready: fetching, 3 s elapsed`. */
export function conditionFetchingText(name: string, elapsedMs: number): string {
  return `wait condition ${name}: fetching, ${Math.floor(elapsedMs / 1000)} s elapsed`;
}

/** The last progress line: `3/3 received, COMPLETE after 41 s`. */
export function conditionFinishText(wc: Pick<WaitCondition, 'received' | 'count' | 'status'>, elapsedMs: number): string {
  return `${wc.received}/${wc.count} received, ${wc.status} after ${Math.floor(elapsedMs / 1000)} s`;
}

/** Human text of the condition's data: one `id: data` line per signal (strings as they are, others as JSON). */
export function formatConditionData(data: WaitCondition['data']): string {
  return formatFields(Object.entries(data));
}

/** Which condition a wait was for, and its own --timeout (undefined: none). */
export interface WaitTarget {
  stack: string;
  name: string;
  timeoutSeconds: number | undefined;
}

/** The ExitError a finished wait ends with (1 FAILED with its reason, 2 our own timeout), or undefined for COMPLETE. */
export function conditionWaitExitError(target: WaitTarget, result: ConditionWaitResult): ExitError | undefined {
  const { stack, name } = target;
  const wc = result.waitCondition;
  const show = `\`hearth waitcondition show ${name} --stack ${stack}\``;
  if (result.outcome === 'COMPLETE') return undefined;
  if (wc === undefined) {
    return new ExitError(
      EXIT.TIMEOUT,
      `hearth-server did not answer about wait condition ${name} within ${target.timeoutSeconds ?? 0} s (--timeout)`,
      {
        hint: NO_REPLY_HINT,
      },
    );
  }
  if (result.outcome === 'TIMEOUT') {
    return new ExitError(
      EXIT.TIMEOUT,
      `wait condition ${name} is still ${wc.status} after ${target.timeoutSeconds ?? 0} s (--timeout): ${wc.received}/${wc.count} received`,
      { hint: `wait longer with --timeout (the condition itself fails at ${wc.deadline}), or see its signals with ${show}` },
    );
  }
  return new ExitError(EXIT.FAILED, `wait condition ${name} ${wc.status}: ${wc.status_reason ?? 'no reason given'}`, {
    hint: `see its signals with ${show}`,
  });
}

/** Registers `hearth waitcondition wait NAME --stack S [--timeout S]`. */
export function registerWaitConditionWaitCommand(waitcondition: Command, deps: CliDeps): void {
  waitcondition
    .command('wait')
    .description('wait until a wait condition is COMPLETE (exit 0) or FAILED (exit 1); exit 2 after --timeout; prints its data')
    .argument('<name>', 'wait condition name')
    .requiredOption('--stack <stack>', 'stack name or id')
    .option('--timeout <seconds>', 'give up after this many seconds (default: until the condition ends; its own timeout fails it)')
    .action(async (name: string, flags: { stack: string; timeout?: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const timeoutSeconds = flags.timeout === undefined ? undefined : parseSeconds(flags.timeout, '--timeout');
      const target: WaitTarget = { stack: flags.stack, name, timeoutSeconds };
      const client = session.client();
      const { io } = session;
      const started = io.now();
      const progress = new ProgressLine(io.stderr);
      let current: WaitCondition | undefined;
      let retrying: string | undefined;
      const show = (): void => {
        const now = io.now();
        if (current === undefined) progress.update(conditionFetchingText(name, now - started), 'fetching', now);
        else if (retrying !== undefined)
          progress.update(`${conditionProgressText(current.received, current.count, now - started)} (${retrying})`, retrying, now);
        else progress.update(conditionProgressText(current.received, current.count, now - started), String(current.received), now);
      };
      const ticker = setInterval(show, 1000);
      let result: ConditionWaitResult | typeof INTERRUPTED;
      try {
        const waiting = waitForCondition(target, {
          client,
          now: io.now,
          sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
          onUpdate: (wc) => {
            current = wc;
            retrying = undefined;
            if (wc.status === 'IN_PROGRESS') show();
          },
          onRetry: (error) => {
            retrying = retryingStatus(error);
            show();
          },
        });
        result = await untilInterrupted(io, waiting);
      } catch (error) {
        progress.close();
        throw error;
      } finally {
        clearInterval(ticker);
      }
      if (result === INTERRUPTED) {
        progress.close();
        const seen = current === undefined ? 'no answer yet' : `${current.status}, ${current.received}/${current.count} received`;
        throw new ExitError(
          EXIT.INTERRUPTED,
          `interrupted after ${Math.floor((io.now() - started) / 1000)} s: wait condition ${name} was ${seen} (it goes on without this wait)`,
          { hint: `wait again with \`hearth waitcondition wait ${name} --stack ${flags.stack}\`` },
        );
      }
      const final = result.waitCondition;
      if (final === undefined) {
        progress.finish(`wait condition ${name}: no answer from hearth-server after ${Math.floor(result.elapsedMs / 1000)} s`);
      } else {
        progress.finish(conditionFinishText(final, result.elapsedMs));
        session.out.result({ wait_condition: final }, () => formatConditionData(final.data));
      }
      const exit = conditionWaitExitError(target, result);
      if (exit !== undefined) throw exit;
    });
}
