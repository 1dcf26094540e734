// Test doubles for the sections: a runner that records each command and answers from a table
// instead of spawning, and a context built around it. Used by the *.test.ts files only.
import { Writable } from 'node:stream';
import { createLogger } from '@hearth/agent-kit/logger';
import type { ProcessResult } from '@hearth/agent-kit/run-process';
import { emptyChanges, type CommandRunner, type RunOptions, type SectionContext } from './context.ts';

/** One recorded call: the command as given (argv joined by spaces, or the shell string) and its options. */
export interface RecordedCall {
  command: string;
  options: RunOptions;
}

/** How the fake answers: exit code and stdout, by exact command text or by a predicate; default exit 0. */
export type FakeAnswer = { exitCode: number; stdout?: string; stderr?: string };

/** A runner that records calls; `answer(command)` decides the result (default exit 0, no output). */
export function recordingRunner(
  answer: (command: string) => FakeAnswer | undefined = () => undefined,
): CommandRunner & { calls: RecordedCall[] } {
  const calls: RecordedCall[] = [];
  return {
    calls,
    async run(command, options = {}) {
      const text = typeof command === 'string' ? command : command.join(' ');
      calls.push({ command: text, options });
      const { exitCode, stdout = '', stderr = '' } = answer(text) ?? { exitCode: 0 };
      const result: ProcessResult = {
        command: text,
        cwd: options.cwd ?? process.cwd(),
        exitCode,
        signal: null,
        stdout,
        stderr,
        durationMs: 0,
        timedOut: false,
        failed: exitCode !== 0,
      };
      return result;
    },
  };
}

/** A section context around `runner`, with `which` answering from `tools`, a sleep that records, and logs kept in `lines`. */
export function fakeContext(runner: CommandRunner, options: { tools?: string[]; fetchUrl?: (url: string) => Promise<Buffer> } = {}) {
  const lines: Array<Record<string, unknown>> = [];
  const slept: number[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  const tools = new Set(options.tools ?? []);
  const context: SectionContext = {
    runner,
    log: createLogger({ name: 'cfn-init', level: 'debug', stream }),
    fetchUrl: options.fetchUrl ?? (async (url) => Promise.reject(new Error(`no fetch in this test: ${url}`))),
    which: (name) => tools.has(name),
    sleep: async (ms) => {
      slept.push(ms);
    },
    changes: emptyChanges(),
  };
  return { context, lines, slept };
}
