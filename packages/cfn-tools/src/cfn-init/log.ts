// cfn-init logs to /var/log/cfn-init.log (as the original) and to stderr (the original wrote only
// the file): one logger whose lines go to both.
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '@hearth/agent-kit/logger';

/** The log file: HEARTH_CFN_INIT_LOG_FILE, else /var/log/cfn-init.log under HEARTH_ROOT (if set). */
export function cfnInitLogFile(env: NodeJS.ProcessEnv = process.env): string {
  return env.HEARTH_CFN_INIT_LOG_FILE || `${env.HEARTH_ROOT ?? ''}/var/log/cfn-init.log`;
}

/** A logger writing to stderr and appending to `file`; `close()` closes the file. The file is skipped (with a warning) when it cannot be opened. */
export function createCfnInitLogger(options: { file: string; verbose: boolean; format: 'json' | 'text'; stderr?: NodeJS.WritableStream }): {
  log: Logger;
  close: () => void;
} {
  const stderr = options.stderr ?? process.stderr;
  let fd: number | undefined;
  let openError: string | undefined;
  try {
    mkdirSync(dirname(options.file), { recursive: true });
    fd = openSync(options.file, 'a', 0o600);
  } catch (error) {
    openError = (error as Error).message;
  }
  // The callback is called at once, so every line reaches the file synchronously (none is lost
  // if the process exits next); stderr keeps its own buffer, which runMain flushes.
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (fd !== undefined) writeSync(fd, chunk);
      stderr.write(chunk);
      callback();
    },
  });
  const log = createLogger({ name: 'cfn-init', level: options.verbose ? 'debug' : 'info', format: options.format, stream });
  if (openError !== undefined) log.warn('cannot write the log file; logging to stderr only', { file: options.file, error: openError });
  return {
    log,
    close: () => {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}
