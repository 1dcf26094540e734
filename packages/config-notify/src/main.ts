// `heat-config-notify`: the command line -> queue and deliver a signal, drain the outbox, or send
// a heartbeat. Resolves to the exit code; only bin.ts exits.
import { closeHttpConnections, createLogger, ExitError, type Logger } from '@hearth/agent-kit';
import { deliverUntilSettled, drainOutbox, type DrainSummary } from './drain.ts';
import { EXIT_CONFIG, EXIT_INTERNAL, EXIT_NOT_QUEUED, EXIT_REFUSED } from './exit-codes.ts';
import { attemptEntry, type AttemptContext, type AttemptResult } from './attempt.ts';
import { sendHeartbeat } from './heartbeat.ts';
import { helpText, parseCommandLine, type NotifyOptions } from './options.ts';
import { Outbox } from './outbox.ts';
import { queueSignal } from './queue.ts';
import { readDeployment } from './route.ts';
import { parseSignalData, readAll } from './signal-data.ts';

/** The version printed by --version. */
export const VERSION = '0.1.0+hearth';

export { EXIT_NOT_QUEUED };

/** Queues the signal; an outbox that cannot be written is ExitError(EXIT_NOT_QUEUED) naming the dir and the reason. */
async function queueOrTempFail(...args: Parameters<typeof queueSignal>): ReturnType<typeof queueSignal> {
  try {
    return await queueSignal(...args);
  } catch (error) {
    if (error instanceof ExitError) throw error; // a deployment that cannot be signalled: final
    throw new ExitError(
      EXIT_NOT_QUEUED,
      `could not queue the signal of deployment ${args[0].id} in the outbox ${args[2].outbox.dir}: ${(error as Error).message}; ` +
        'nothing was sent: free or fix that directory (or set HEARTH_OUTBOX_DIR), then run heat-config-notify again',
    );
  }
}

/** What main reads besides argv (tests pass their own). */
export interface MainIo {
  env?: NodeJS.ProcessEnv;
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  /** Ends --drain --follow and --wait after the attempt in flight. Default: SIGTERM/SIGINT. */
  stop?: AbortSignal;
}

function attemptContext(options: NotifyOptions, log: Logger): AttemptContext {
  return { outbox: new Outbox(options.outboxDir), log, backoff: options.backoff, timeoutMs: options.timeoutMs, lateMs: options.lateMs };
}

/** An AbortSignal fired by SIGTERM or SIGINT, and a function removing the handlers. */
function stopOnSignals(): { signal: AbortSignal; dispose(): void } {
  const controller = new AbortController();
  const onSignal = (): void => controller.abort();
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  return {
    signal: controller.signal,
    dispose: () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    },
  };
}

/** Exit code of a plain or --wait notify: 0 delivered or still queued (without --wait), else 1. */
function notifyExitCode(result: AttemptResult, wait: boolean): number {
  if (result.state === 'delivered' || result.state === 'gone') return 0;
  if (result.state === 'queued' || result.state === 'busy') return wait ? 1 : 0;
  return 1;
}

/**
 * Exit code of a drain: EXIT_CONFIG while entry files it cannot read are left (nothing was sent for them and only
 * an operator can fix them), else 1 when it dropped a rejected or expired signal, else 0. The daemon (`--follow`)
 * ends only when asked to stop, and logged each of those as it happened: it exits 0, so that `systemctl stop`
 * does not leave its unit failed.
 */
function drainExitCode(summary: DrainSummary, mode: 'once' | 'empty' | 'follow', dir: string, log: Logger): number {
  if (mode === 'follow') return 0;
  if (summary.unreadable > 0) {
    log.error(
      `${summary.unreadable} outbox entr${summary.unreadable === 1 ? 'y' : 'ies'} could not be read and were not sent: ` +
        `repair or remove the files named above in ${dir} (check their owner, mode and JSON), then run heat-config-notify --drain again`,
      { unreadable: summary.unreadable, outbox: dir },
    );
    return EXIT_CONFIG;
  }
  return summary.rejected + summary.expired > 0 ? EXIT_REFUSED : 0;
}

/**
 * Runs the command line; resolves to the exit code. An unexpected error is ExitError(EXIT_INTERNAL), never the
 * 1 of a refused signal: the caller cannot tell whether the signal was queued, so it must hand it over again.
 */
export async function main(argv: string[], io: MainIo = {}): Promise<number> {
  try {
    return await run(argv, io);
  } catch (error) {
    if (error instanceof ExitError) throw error;
    const reason = error instanceof Error ? error.message || error.name : String(error);
    // What is left to do depends on what was asked: a drain or a heartbeat queued nothing.
    const next = argv.includes('--drain')
      ? 'the queued signals stay in the outbox: fix the cause and drain again'
      : argv.includes('--heartbeat')
        ? 'the heartbeat was not sent'
        : 'the signal may not be queued: hand it over again (heat-config does on its next run)';
    throw new ExitError(EXIT_INTERNAL, `internal error: ${reason}; ${next}`);
  }
}

async function run(argv: string[], io: MainIo): Promise<number> {
  const command = parseCommandLine(argv, io.env ?? process.env);
  const stdout = io.stdout ?? process.stdout;
  if (command.action === 'help') {
    stdout.write(helpText());
    return 0;
  }
  if (command.action === 'version') {
    stdout.write(`${VERSION}\n`);
    return 0;
  }
  const { options } = command;
  const log = createLogger({
    name: 'heat-config-notify',
    format: options.logFormat,
    level: options.logLevel,
    ...(io.stderr ? { stream: io.stderr } : {}),
  });
  const signals = io.stop ? undefined : stopOnSignals();
  const stop = io.stop ?? signals!.signal;
  try {
    const ctx = attemptContext(options, log);
    if (command.action === 'drain') {
      const summary = await drainOutbox(ctx, { mode: command.mode, stop });
      log.info('drain finished', { ...summary });
      return drainExitCode(summary, command.mode, ctx.outbox.dir, log);
    }
    const info = readDeployment(command.deploymentFile);
    if (command.action === 'heartbeat') {
      const result = await sendHeartbeat(info, { message: command.message, progress: command.progress, timeoutMs: options.timeoutMs });
      if (result.sent) log.debug('heartbeat sent', { deployment: info.id, deadline: result.deadline });
      else if (result.why === 'unsupported') log.debug('no heartbeat for this deployment', { deployment: info.id, reason: result.detail });
      else log.warn('heartbeat not sent', { deployment: info.id, reason: result.detail });
      return result.sent || result.why === 'unsupported' ? 0 : 1;
    }
    const input = await readAll(io.stdin ?? process.stdin);
    const { data, warnings, cutShort } = parseSignalData(input);
    if (cutShort) {
      // Its writer died mid-write (a dispatcher piping the result, as 55-heat-config does). Signalling {} would
      // settle the deployment COMPLETE without its outputs; the dispatcher hands the whole result over again.
      throw new ExitError(
        EXIT_NOT_QUEUED,
        `the signal data on stdin of deployment ${info.id} ends inside its JSON after ${input.length} bytes: it was cut short ` +
          '(did the process writing it die?); nothing was queued or sent: hand the whole result over again',
      );
    }
    for (const warning of warnings) log.warn(warning, { deployment: info.id });
    const entry = await queueOrTempFail(info, data, { outbox: ctx.outbox, log, maxBodyBytes: options.maxBodyBytes });
    if (entry === null) {
      log.info('no signal transport configured (NO_SIGNAL): nothing to send', { deployment: info.id });
      return 0;
    }
    log.debug('signal queued', {
      deployment: info.id,
      entry: entry.id,
      transport: entry.route.transport,
      file: ctx.outbox.pathOf(entry.id),
    });
    const result = command.wait ? await deliverUntilSettled(entry.id, ctx, stop) : await attemptEntry(entry.id, ctx);
    if (result.state === 'queued' && !command.wait)
      log.info('signal queued in the outbox; heat-config-notify --drain will deliver it', { deployment: info.id, entry: entry.id });
    return notifyExitCode(result, command.wait);
  } finally {
    signals?.dispose();
    closeHttpConnections();
  }
}
