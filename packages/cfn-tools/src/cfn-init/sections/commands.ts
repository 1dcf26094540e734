// commands: {name: {command, env, cwd, test, ignoreErrors, waitAfterCompletion}}, run in order of
// name. A string command runs through /bin/sh -c, a list runs as argv. `env` replaces the whole
// environment (AWS and the original both do). `test` runs first, through the shell; non-zero skips
// the command. A failure stops cfn-init unless ignoreErrors is true. waitAfterCompletion waits that
// many seconds afterwards; "forever" stops cfn-init there, successfully (AWS: for a reboot).
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { commandFailed, isObject, outputTail, scalarText, StepError, toBoolean, type RunOptions, type SectionContext } from '../context.ts';

/** What applyCommands tells the caller: whether a waitAfterCompletion of "forever" asked to stop. */
export interface CommandsOutcome {
  stop: boolean;
}

function expandHome(path: string): string {
  return path === '~' || path.startsWith('~/') ? homedir() + path.slice(1) : path;
}

function environment(name: string, env: unknown): Record<string, string> | undefined {
  if (env === undefined) return undefined;
  if (!isObject(env)) throw new StepError('commands', name, null, `env must be an object of strings, not ${JSON.stringify(env)}`);
  return Object.fromEntries(Object.entries(env).map(([key, value]) => [key, typeof value === 'string' ? value : JSON.stringify(value)]));
}

function commandLine(name: string, command: unknown): string | string[] {
  if (typeof command === 'string' && command.trim() !== '') return command;
  if (Array.isArray(command) && command.length > 0 && command.every((part) => typeof part === 'string')) return command;
  if (command === undefined) throw new StepError('commands', name, null, "the 'command' property is missing");
  throw new StepError('commands', name, null, `command must be a string or a non-empty list of strings, not ${JSON.stringify(command)}`);
}

function waitSeconds(name: string, wait: unknown): number | 'forever' {
  if (wait === undefined) return 0;
  if (wait === 'forever') return 'forever';
  const seconds = Number(wait);
  if (!Number.isFinite(seconds) || seconds < 0)
    throw new StepError('commands', name, null, `waitAfterCompletion must be seconds or "forever", not ${JSON.stringify(wait)}`);
  return seconds;
}

/** Runs the commands in order of name; throws StepError on the first failure not ignored. */
export async function applyCommands(ctx: SectionContext, commands: unknown): Promise<CommandsOutcome> {
  if (commands === undefined) return { stop: false };
  if (!isObject(commands))
    throw new StepError('commands', '(section)', null, `must be an object of {name: {command, ...}}, not ${JSON.stringify(commands)}`);
  for (const name of Object.keys(commands).sort()) {
    const properties = commands[name];
    if (!isObject(properties)) throw new StepError('commands', name, null, `must be an object, not ${JSON.stringify(properties)}`);
    const command = commandLine(name, properties.command);
    const wait = waitSeconds(name, properties.waitAfterCompletion);
    const env = environment(name, properties.env);
    const options: RunOptions = env === undefined ? {} : { env, replaceEnv: true };
    if (properties.cwd !== undefined) {
      const rawCwd = scalarText(properties.cwd);
      if (rawCwd === undefined) throw new StepError('commands', name, null, `cwd must be a path, not ${JSON.stringify(properties.cwd)}`);
      const cwd = expandHome(rawCwd);
      if (!existsSync(cwd)) throw new StepError('commands', name, null, `cwd ${cwd} does not exist`);
      options.cwd = cwd;
    }
    if (properties.test !== undefined) {
      const testLine = scalarText(properties.test);
      if (testLine === undefined)
        throw new StepError('commands', name, null, `test must be a shell command string, not ${JSON.stringify(properties.test)}`);
      const test = await ctx.runner.run(testLine, options);
      if (test.exitCode !== 0) {
        ctx.log.info('test returned false, command skipped', {
          section: 'commands',
          command: name,
          test: test.command,
          exitCode: test.exitCode,
        });
        continue;
      }
    }
    const result = await ctx.runner.run(command, options);
    ctx.changes.commands.add(name);
    if (result.exitCode === 0) ctx.log.info('command succeeded', { section: 'commands', command: name, durationMs: result.durationMs });
    else if (toBoolean(properties.ignoreErrors)) {
      ctx.log.warn('command failed, ignoreErrors set', {
        section: 'commands',
        command: name,
        exitCode: result.exitCode,
        output: outputTail(result),
      });
    } else throw new StepError('commands', name, result.exitCode, commandFailed(result));
    if (wait === 'forever') {
      ctx.log.info('waitAfterCompletion is forever: stopping here', { section: 'commands', command: name });
      return { stop: true };
    }
    if (wait > 0) await ctx.sleep(wait * 1000);
  }
  return { stop: false };
}
