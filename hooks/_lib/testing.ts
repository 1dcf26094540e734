/** Test helpers for hooks: run a hook executable as a black box, and fake tools that record how they were run. */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** How a hook run ended: exit code, raw streams, and stdout parsed as JSON (undefined if it was not JSON). */
export interface HookRun {
  exitCode: number | null;
  stdout: string;
  stderr: string;
  result: Record<string, unknown> | undefined;
}

/** Options of runHookExecutable. */
export interface RunHookOptions {
  /** Env vars added to a minimal environment (PATH with node, HOME, LANG). Default none. */
  env?: Record<string, string | undefined>;
  /** Command-line arguments. Default none. */
  args?: string[];
  /** Working directory. Default a fresh temp dir. */
  cwd?: string;
  /** Kill the hook after this many ms. Default 20000. */
  timeoutMs?: number;
  /** Called with the hook's pid once it has started (to signal it). */
  onStart?: (pid: number) => void;
}

/** Runs `executable` with `stdin` (a string as-is, anything else as JSON) and collects what it printed. */
export function runHookExecutable(executable: string, stdin: unknown, options: RunHookOptions = {}): Promise<HookRun> {
  const env: Record<string, string> = {
    PATH: `${dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`,
    HOME: tmpdir(),
    LANG: 'C.UTF-8',
  };
  for (const [name, value] of Object.entries(options.env ?? {})) if (value !== undefined) env[name] = value;
  const child = spawn(executable, options.args ?? [], {
    cwd: options.cwd ?? mkdtempSync(join(tmpdir(), 'hook-cwd-')),
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20000);
  if (child.pid !== undefined) options.onStart?.(child.pid);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.on('error', () => undefined);
  child.stdin.end(typeof stdin === 'string' ? stdin : JSON.stringify(stdin));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (exitCode) => {
      clearTimeout(timer);
      let result: Record<string, unknown> | undefined;
      try {
        result = JSON.parse(stdout) as Record<string, unknown>;
      } catch {
        result = undefined;
      }
      resolve({ exitCode, stdout, stderr, result });
    });
  });
}

/** One recorded run of a fake tool. */
export interface ToolCall {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  stdin: string;
}

/** What a fake tool does when run. */
export interface FakeToolBehaviour {
  /** Printed on stdout. Default ''. */
  stdout?: string;
  /** Printed on stderr. Default ''. */
  stderr?: string;
  /** Exit code. Default 0. */
  exitCode?: number;
  /** Files to write before exiting, path -> content (relative paths are relative to the tool's cwd). Default none. */
  files?: Record<string, string>;
}

/** A fake tool on disk: its path, and the calls it recorded. */
export interface FakeTool {
  /** Absolute path of the executable. */
  path: string;
  /** Its directory (put it first on PATH to shadow the real tool). */
  dir: string;
  /** Every run so far, oldest first. */
  calls(): ToolCall[];
}

const FAKE_TOOL_SOURCE = `#!NODE
const fs = require('node:fs');
const path = require('node:path');
const self = process.argv[1];
const behaviour = JSON.parse(fs.readFileSync(self + '.behaviour.json', 'utf8'));
let stdin = '';
try { stdin = fs.readFileSync(0, 'utf8'); } catch {}
fs.appendFileSync(self + '.calls.jsonl', JSON.stringify({ argv: process.argv.slice(2), cwd: process.cwd(), env: process.env, stdin }) + '\\n');
for (const [file, content] of Object.entries(behaviour.files || {})) fs.writeFileSync(path.resolve(file), content);
process.stdout.write(behaviour.stdout || '');
process.stderr.write(behaviour.stderr || '');
process.exitCode = behaviour.exitCode || 0;
`;

/** Writes an executable `name` (in `dir`, default a fresh temp dir) that records argv, cwd, env and stdin, then behaves as told. */
export function fakeTool(name: string, behaviour: FakeToolBehaviour = {}, dir?: string): FakeTool {
  const toolDir = dir ?? mkdtempSync(join(tmpdir(), 'fake-tool-'));
  const path = join(toolDir, name);
  writeFileSync(path, FAKE_TOOL_SOURCE.replace('NODE', process.execPath));
  chmodSync(path, 0o755);
  writeFileSync(`${path}.behaviour.json`, JSON.stringify(behaviour));
  return {
    path,
    dir: toolDir,
    calls: () => {
      if (!existsSync(`${path}.calls.jsonl`)) return [];
      return readFileSync(`${path}.calls.jsonl`, 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as ToolCall);
    },
  };
}

/** A minimal valid deployment for tests, with `overrides` on top. */
export function sampleDeployment(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'c1f2a3b4-0000-4000-8000-000000000001',
    name: 'sample',
    group: 'script',
    creation_time: '2026-01-02T03:04:05Z',
    config: '',
    inputs: [],
    outputs: [],
    options: {},
    ...overrides,
  };
}
