// What every cfn-init section gets: a command runner (injectable, so package managers, users,
// groups and services are tested by the exact commands they would run), a URL fetcher, a way
// to find executables, the logger, and the run-wide record of what changed (services restart
// on it).
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { Logger } from '@hearth/agent-kit/logger';
import type { ProcessResult } from '@hearth/agent-kit/run-process';

/** How to run one command: argv (no shell) or a string run by /bin/sh -c. */
export interface RunOptions {
  /** Working directory. Default the caller's cwd. */
  cwd?: string;
  /** Extra environment variables. Default none. */
  env?: Record<string, string>;
  /** Give the child `env` alone instead of adding it to this process's environment (AWS `env` semantics). Default false. */
  replaceEnv?: boolean;
}

/** Runs commands; the default spawns them, tests record them. Never throws for a failing command. */
export interface CommandRunner {
  run(command: string | readonly string[], options?: RunOptions): Promise<ProcessResult>;
}

/** Names that changed during this run, by kind; a service lists the ones it restarts on. */
export interface ChangeSet {
  files: Set<string>;
  sources: Set<string>;
  /** `<manager>:<package>`. */
  packages: Set<string>;
  commands: Set<string>;
}

/** What a section is given. */
export interface SectionContext {
  runner: CommandRunner;
  log: Logger;
  /** Fetches a URL (http, https, file) into memory. */
  fetchUrl: (url: string) => Promise<Buffer>;
  /** Whether an executable is on PATH (or, for an absolute name, exists and is executable). */
  which: (name: string) => boolean;
  /** Waits `ms` (commands' waitAfterCompletion). */
  sleep: (ms: number) => Promise<void>;
  changes: ChangeSet;
}

/** A step that failed: names the section, the key in it, and the exit code when a command failed. */
export class StepError extends Error {
  override readonly name = 'StepError';
  constructor(
    readonly section: string,
    readonly key: string,
    readonly exitCode: number | null,
    detail: string,
  ) {
    super(`${section}: ${key}: ${detail}${exitCode === null ? '' : ` (exit code ${exitCode})`}`);
  }
}

/** An empty ChangeSet. */
export function emptyChanges(): ChangeSet {
  return { files: new Set(), sources: new Set(), packages: new Set(), commands: new Set() };
}

/** The runner that really spawns: argv without a shell, strings through /bin/sh -c; runProcess is loaded on first use. */
export function processRunner(): CommandRunner {
  return {
    async run(command, options = {}) {
      const { runProcess } = await import('@hearth/agent-kit/run-process');
      const [program, ...args] = typeof command === 'string' ? ['/bin/sh', '-c', command] : command;
      if (program === undefined) throw new Error('empty command');
      return runProcess(program, args, {
        ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
        env: options.env ?? {},
        extendEnv: options.replaceEnv !== true,
      });
    },
  };
}

/** `which` over PATH (env's PATH, default process.env.PATH). */
export function pathWhich(env: NodeJS.ProcessEnv = process.env): (name: string) => boolean {
  const executable = (path: string): boolean => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  return (name) =>
    name.includes('/') ? executable(name) : (env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && executable(join(dir, name)));
}

/** A short, single-line tail of a command's output for messages. */
export function outputTail(result: ProcessResult): string {
  const text = `${result.stderr}\n${result.stdout}`.trim();
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  return lines.slice(-3).join(' | ').slice(0, 500);
}

/** `<command> failed: <last lines of its output>` (without the colon when it printed nothing). */
export function commandFailed(result: ProcessResult, detail = outputTail(result)): string {
  return detail === '' ? `${result.command} failed` : `${result.command} failed: ${detail}`;
}

/** AWS's booleans: true, "true", "yes", "1" (any case). */
export function toBoolean(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'number') return value === 1;
  return typeof value === 'string' && ['true', 'yes', '1'].includes(value.trim().toLowerCase());
}

/** True for a plain JSON object. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A string or number as text; undefined for anything else (objects, lists, booleans, null). */
export function scalarText(value: unknown): string | undefined {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined;
}
