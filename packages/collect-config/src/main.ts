// `os-collect-config`: flags and config file -> options -> the loop. SIGHUP and a changed config
// file "re-exec": Node cannot exec itself in place, so the run is rebuilt from argv in the same
// process (same pid, so systemd keeps tracking it), which is what the original's execv achieves.
import { createWriteStream, type WriteStream } from 'node:fs';
import { createLogger, httpRequest, type Logger } from '@hearth/agent-kit';
import { runCollectConfig } from './daemon.ts';
import { argvForLog, helpText, parseCommandLine, type CollectOptions } from './options.ts';
import { runCommand } from './run-command.ts';
import { formatStatus, readStatus } from './status.ts';

/** The version printed by --version. */
export const VERSION = '12.0.0+hearth';

function loggerFor(options: CollectOptions): { log: Logger; file: WriteStream | undefined } {
  const file = options.logFile ? createWriteStream(options.logFile, { flags: 'a' }) : undefined;
  return {
    log: createLogger({ name: 'os-collect-config', format: options.logFormat, level: options.logLevel, ...(file ? { stream: file } : {}) }),
    file,
  };
}

/** Ends the log file and waits until its lines are written: the process exits right after main resolves. */
function closeLogFile(file: WriteStream | undefined): Promise<void> {
  if (file === undefined) return Promise.resolve();
  return new Promise((resolve) => {
    // Kept: a line logged after the end (a request settling late) must not become an uncaught error.
    file.on('error', () => resolve());
    file.end(() => resolve());
  });
}

function printStatus(options: CollectOptions): number {
  const status = readStatus(options.statusFile);
  if (!status) {
    process.stderr.write(`os-collect-config: no status at ${options.statusFile} (has the daemon run yet?)\n`);
    return 3;
  }
  process.stdout.write(options.json ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status));
  return 0;
}

/** Runs the command line; resolves to the exit code (the command's when --one-time ran it and it failed). */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let commandRunning = false;
  let current: AbortController | undefined;
  const onHup = (): void => {
    if (commandRunning) return;
    current?.abort('reexec');
  };
  process.on('SIGHUP', onHup);
  try {
    for (;;) {
      const parsed = parseCommandLine(argv, env);
      if (parsed.action === 'help') {
        process.stdout.write(helpText());
        return 0;
      }
      if (parsed.action === 'version') {
        process.stdout.write(`${VERSION}\n`);
        return 0;
      }
      const { options } = parsed;
      if (options.printCachedir) {
        process.stdout.write(`${options.cachedir}\n`);
        return 0;
      }
      if (options.status) return printStatus(options);
      const { log, file } = loggerFor(options);
      current = new AbortController();
      try {
        const outcome = await runCollectConfig(options, {
          http: httpRequest,
          log,
          runCommand: (command, files) => runCommand(command, files, env),
          onCommand: (running) => (commandRunning = running),
          stop: current.signal,
        });
        if (!outcome.reexec) return outcome.exitCode;
        log.info(`Re-executing ${['os-collect-config', ...argvForLog(argv)].join(' ')}`);
      } finally {
        await closeLogFile(file);
      }
    }
  } finally {
    process.off('SIGHUP', onHup);
  }
}
