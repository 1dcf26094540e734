// `os-collect-config`: flags and config file -> options -> the loop. SIGHUP and a changed config
// file "re-exec": Node cannot exec itself in place, so the run is rebuilt from argv in the same
// process (same pid, so systemd keeps tracking it), which is what the original's execv achieves.
import { createWriteStream } from 'node:fs';
import { createLogger, httpRequest, type Logger } from '@hearth/agent-kit';
import { runCollectConfig } from './daemon.ts';
import { argvForLog, helpText, parseCommandLine, type CollectOptions } from './options.ts';
import { runCommand } from './run-command.ts';
import { formatStatus, readStatus } from './status.ts';

/** The version printed by --version. */
export const VERSION = '12.0.0+hearth';

function loggerFor(options: CollectOptions): Logger {
  return createLogger({
    name: 'os-collect-config',
    format: options.logFormat,
    level: options.logLevel,
    ...(options.logFile ? { stream: createWriteStream(options.logFile, { flags: 'a' }) } : {}),
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
      const log = loggerFor(options);
      current = new AbortController();
      const outcome = await runCollectConfig(options, {
        http: httpRequest,
        log,
        runCommand: (command, files) => runCommand(command, files, env),
        onCommand: (running) => (commandRunning = running),
        stop: current.signal,
      });
      if (!outcome.reexec) return outcome.exitCode;
      log.info(`Re-executing ${['os-collect-config', ...argvForLog(argv)].join(' ')}`);
    }
  } finally {
    process.off('SIGHUP', onHup);
  }
}
