// os-apply-config: one run, from parsed options to files on disk (or one printed value).
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '@hearth/agent-kit/logger';
import { ApplyConfigError } from './errors.ts';
import { booleanKeyExitCode, keyOutput } from './key.ts';
import { collectConfig, loadFileList, subhash } from './metadata.ts';
import { defaultTemplatesDir, parseOptions, type ApplyConfigOptions } from './options.ts';
import { buildTree, templatePaths } from './templates.ts';
import { USAGE } from './usage.ts';
import { UnknownTypeError } from './value-types.ts';
import { writeRenderedFile } from './write-file.ts';

/** The version `--version` prints. */
/** The version of Debian's os-apply-config this is a drop-in for, marked as hearth's (as collect-config's). */
export const VERSION = '12.0.0+hearth';

/** Where a run writes: stdout for printed values; the log stream; env for OS_CONFIG_FILES. */
export interface ApplyConfigIo {
  stdout: NodeJS.WritableStream;
  log: Logger;
  env: NodeJS.ProcessEnv;
}

/** The metadata files to read, by the original's precedence: -m, $OS_CONFIG_FILES, the JSON list (then the legacy list). */
export function metadataFiles(options: ApplyConfigOptions, io: ApplyConfigIo): string[] {
  if (options.metadata.length > 0) return options.metadata;
  const fromEnv = io.env.OS_CONFIG_FILES;
  if (fromEnv !== undefined) return fromEnv.split(':');
  const listed = loadFileList(options.osConfigFiles);
  if (listed.length === 0 && options.osConfigFiles === options.defaultOsConfigFiles) {
    io.log.warn(`DEPRECATED: falling back to ${options.legacyOsConfigFiles}`);
    return loadFileList(options.legacyOsConfigFiles);
  }
  return listed;
}

/** Runs os-apply-config with parsed options; returns the exit code (errors are logged, exit 1). */
export function applyConfig(options: ApplyConfigOptions, io: ApplyConfigIo): number {
  if (options.printTemplates) {
    io.stdout.write(`${options.templates}\n`);
    return 0;
  }
  try {
    const files = metadataFiles(options, io);
    if (options.key && options.booleanKey) io.log.warn('--key is not compatible with --boolean-key. --boolean-key ignored.');
    if (options.key) {
      const config = collectConfig(files, options.fallbackMetadata);
      io.stdout.write(`${keyOutput(config, options.key, options.type, options.keyDefault, files)}\n`);
      return 0;
    }
    if (options.booleanKey) return booleanKeyExitCode(collectConfig(files, options.fallbackMetadata), options.booleanKey);
    const config = subhash(collectConfig(files, options.fallbackMetadata), options.subhash);
    const rendered = buildTree(templatePaths(options.templates), config);
    if (!options.validate) {
      for (const file of rendered) {
        const path = join(options.output, file.target);
        let outcome;
        try {
          outcome = writeRenderedFile(path, file);
        } catch (error) {
          // A full disk's ENOSPC names no file; the target is left as it was.
          throw new ApplyConfigError(`Could not write ${path}: ${(error as Error).message}`);
        }
        io.log.info(outcome === 'written' ? `writing ${path}` : outcome === 'deleted' ? `deleting ${path}` : `not creating empty ${path}`);
      }
    }
    io.log.info('success');
    return 0;
  } catch (error) {
    if (!(error instanceof ApplyConfigError || error instanceof UnknownTypeError)) throw error;
    io.log.error(error.message);
    return 1;
  }
}

/** The log file the original also writes when run as root. Default /var/log/os-apply-config.log. */
export function logFilePath(env: NodeJS.ProcessEnv): string {
  return env.HEARTH_APPLY_CONFIG_LOG_FILE || join(env.HEARTH_ROOT ?? '/', '/var/log/os-apply-config.log');
}

/** stderr, plus the log file when root (as the original); a log file that cannot be written is skipped. */
function logStream(env: NodeJS.ProcessEnv): NodeJS.WritableStream {
  if (process.geteuid?.() !== 0) return process.stderr;
  const file = logFilePath(env);
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      process.stderr.write(chunk);
      try {
        // Modes as under the usual umask 022, also under umask 000: never writable by others.
        mkdirSync(dirname(file), { recursive: true, mode: 0o755 });
        appendFileSync(file, chunk, { mode: 0o644 });
      } catch {
        // the original would fail to start; stderr still has the line
      }
      done();
    },
  });
}

/** The command: argv without node and the script. */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const options = parseOptions(argv, env);
  if (options.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (options.version) {
    process.stdout.write(`${VERSION}\n`);
    return 0;
  }
  const log = createLogger({ name: 'os-apply-config', format: options.logFormat, stream: logStream(env) });
  const templates = defaultTemplatesDir(env);
  if (templates.deprecated && options.templates === templates.path) {
    log.warn(
      `Template directory ${templates.path} is deprecated.  The recommended location for template files is /usr/libexec/os-apply-config/templates`,
    );
  }
  return applyConfig(options, { stdout: process.stdout, log, env });
}
