// For tests only: runs `hearth` in-process against a fake client, or the real one.
import { createClient, type ClientOptions, type HearthClient } from '@hearth/client';
import type { CliIo } from './io.ts';
import { run } from './run.ts';

/** What one fake run printed and how it exited, plus the client options and calls it made. */
export interface FakeRun {
  code: number;
  stdout: string;
  stderr: string;
  clientOptions: ClientOptions[];
  calls: Array<[string, unknown[]]>;
}

/** Client methods a fake offers; any other method is absent. */
export type FakeMethods = Partial<Record<keyof HearthClient, (...args: never[]) => unknown>>;

/** An IO that appends to `result`'s stdout and stderr and reads `files`. */
function captureIo(result: FakeRun, env: Record<string, string>, files: Record<string, string>): CliIo {
  return {
    stdout: { write: (text) => void (result.stdout += text) },
    stderr: { write: (text) => void (result.stderr += text) },
    env,
    readTextFile: async (path) => {
      const text = files[path];
      if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
      return text;
    },
    now: () => Date.now(),
  };
}

/**
 * Runs `hearth` in-process with the real client (against a server the test started on 127.0.0.1);
 * `calls` stays empty.
 */
export async function runWithClient(argv: string[], env: Record<string, string>): Promise<FakeRun> {
  const result: FakeRun = { code: -1, stdout: '', stderr: '', clientOptions: [], calls: [] };
  result.code = await run(argv, {
    io: captureIo(result, env, {}),
    createClient: (options) => {
      result.clientOptions.push(options);
      return createClient(options);
    },
  });
  return result;
}

/**
 * Runs `hearth` in-process against a fake client: only the methods a test passes exist, and every
 * call is recorded. The fake stands in for the whole client, hence the cast. `files` are what
 * `--config-file` and the like can read.
 */
export async function runFake(
  argv: string[],
  methods: FakeMethods = {},
  env: Record<string, string> = { HEARTH_TOKEN: 'admin' },
  files: Record<string, string> = {},
): Promise<FakeRun> {
  const result: FakeRun = { code: -1, stdout: '', stderr: '', clientOptions: [], calls: [] };
  const io = captureIo(result, env, files);
  const client = new Proxy(
    {},
    {
      get: (_target, name: string) => {
        const method = (methods as Record<string, ((...args: unknown[]) => unknown) | undefined>)[name];
        if (method === undefined) return undefined;
        return (...args: unknown[]) => {
          result.calls.push([name, args]);
          return method(...args);
        };
      },
    },
  ) as HearthClient;
  result.code = await run(argv, {
    io,
    createClient: (options) => {
      result.clientOptions.push(options);
      return client;
    },
  });
  return result;
}
