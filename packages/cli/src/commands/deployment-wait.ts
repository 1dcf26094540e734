import type { Command } from 'commander';
import { NO_REPLY_HINT } from '../deadline.ts';
import { EXIT, ExitError } from '../errors.ts';
import { parseId, parseSeconds } from '../flag-values.ts';
import { INTERRUPTED, untilInterrupted } from '../interrupt.ts';
import { addExamples, DEPLOYMENT_WAIT_EXAMPLES } from '../help-examples.ts';
import { formatFields } from '../output.ts';
import { ProgressLine } from '../progress-line.ts';
import { retryingStatus } from '../outage.ts';
import { openSession, type CliDeps } from '../session.ts';
import { waitForDeployment, type WaitResult } from '../wait-loop.ts';

/** Default of `deployment wait --timeout`, in seconds. */
export const DEFAULT_WAIT_TIMEOUT = 3600;

/**
 * The progress text: `deployment ID: IN_PROGRESS, 12 s elapsed`, with the whole id: ids are UUIDv7,
 * whose first 8 digits are a timestamp shared by every deployment made in the same minute or so.
 */
export function progressText(id: string, status: string, elapsedMs: number): string {
  return `deployment ${id}: ${status}, ${Math.floor(elapsedMs / 1000)} s elapsed`;
}

/** The ExitError a finished wait ends with, or undefined for COMPLETE. */
export function waitExitError(id: string, result: WaitResult, timeoutSeconds: number): ExitError | undefined {
  if (result.outcome === 'COMPLETE') return undefined;
  const { deployment } = result;
  if (deployment === undefined) {
    return new ExitError(EXIT.TIMEOUT, `hearth-server did not answer about deployment ${id} within ${timeoutSeconds} s (--timeout)`, {
      hint: NO_REPLY_HINT,
    });
  }
  if (result.outcome === 'TIMEOUT') {
    return new ExitError(EXIT.TIMEOUT, `deployment ${id} is still ${deployment.status} after ${timeoutSeconds} s (--timeout)`, {
      hint: `wait longer with --timeout, or see what happened with \`hearth deployment timeline ${id}\``,
    });
  }
  const reason = deployment.status_reason ?? 'no reason given';
  return new ExitError(EXIT.FAILED, `deployment ${id} ${deployment.status}: ${reason}`, {
    hint: `see \`hearth deployment output ${id} deploy_stderr\` and \`hearth deployment timeline ${id}\``,
  });
}

/** Registers `hearth deployment wait ID [--timeout S]`. */
export function registerDeploymentWaitCommand(deployment: Command, deps: CliDeps): void {
  const wait = deployment
    .command('wait')
    .description('wait until a deployment is COMPLETE (exit 0) or FAILED (exit 1); exit 2 after --timeout')
    .argument('<id>', 'deployment id')
    .option('--timeout <seconds>', `give up after this many seconds (default ${DEFAULT_WAIT_TIMEOUT})`)
    .action(async (id: string, flags: { timeout?: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      parseId(id, 'deployment');
      const timeoutSeconds = flags.timeout === undefined ? DEFAULT_WAIT_TIMEOUT : parseSeconds(flags.timeout, '--timeout');
      const client = session.client();
      const { io } = session;
      const started = io.now();
      const progress = new ProgressLine(io.stderr);
      let status = 'fetching';
      const show = (): void => {
        const now = io.now();
        progress.update(progressText(id, status, now - started), status, now);
      };
      const ticker = setInterval(show, 1000);
      let result: WaitResult | typeof INTERRUPTED;
      try {
        const waiting = waitForDeployment(id, timeoutSeconds, {
          client,
          now: io.now,
          sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
          onUpdate: (d) => {
            status = d.status;
            if (d.status === 'IN_PROGRESS') show();
          },
          onRetry: (error) => {
            status = retryingStatus(error);
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
        throw new ExitError(
          EXIT.INTERRUPTED,
          `interrupted after ${Math.floor((io.now() - started) / 1000)} s: deployment ${id} was ${status} (it goes on without this wait)`,
          { hint: `wait again with \`hearth deployment wait ${id}\`` },
        );
      }
      const { deployment: final } = result;
      const elapsed = `${Math.floor(result.elapsedMs / 1000)} s`;
      if (final === undefined) {
        progress.finish(`deployment ${id}: no answer from hearth-server after ${elapsed}`);
      } else {
        progress.finish(`deployment ${id}: ${final.status} after ${elapsed}`);
        session.out.result({ software_deployment: final }, () =>
          formatFields([
            ['id', final.id],
            ['status', final.status],
            ['status_reason', final.status_reason],
          ]),
        );
      }
      const exit = waitExitError(id, result, timeoutSeconds);
      if (exit !== undefined) throw exit;
    });
  addExamples(wait, DEPLOYMENT_WAIT_EXAMPLES);
}
