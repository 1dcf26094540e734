// Shared by this package's tests: temp roots, fake hooks and a fake heat-config-notify that records calls.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestContext } from 'node:test';

/** The package's bin, run with node. */
export const BIN = fileURLToPath(new URL('../bin/heat-config.js', import.meta.url));

/** A temp dir removed when the test ends. */
export function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'heat-config-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Writes an executable file (mode 0755), creating its dir. */
export function writeExecutable(path: string, body: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, body);
  chmodSync(path, 0o755);
  return path;
}

/** One heat-config world in a temp root: config file, deployed dir, hooks dir, a recording notify. */
export interface World {
  root: string;
  configFile: string;
  deployedDir: string;
  hooksDir: string;
  /** Where the fake notify writes one `<n>.args` / `<n>.stdin` pair per call (heartbeats: `<n>.heartbeat`). */
  notifyLog: string;
  env: NodeJS.ProcessEnv;
  /** Writes the deployments list. */
  deployments(list: unknown): void;
  /** Writes hooks/<name> as a shell script. */
  hook(name: string, body: string): string;
  /** The result calls the fake notify got, in order: the deployment file argument and the signal. */
  notified(): Array<{ file: string; signal: Record<string, unknown> }>;
  /** The heartbeat messages the fake notify got, in order. */
  heartbeats(): string[];
}

/** A fake heat-config-notify: records its arguments and stdin; exits with $FAKE_NOTIFY_EXIT (default 0). */
export const FAKE_NOTIFY = `#!/bin/sh
n=$(ls "$NOTIFY_LOG" | wc -l)
n=$(printf '%05d' "$n")
if [ "$1" = "--heartbeat" ]; then
  shift 2
  [ "$1" = "--" ] && shift
  printf '%s' "$1" > "$NOTIFY_LOG/$n.heartbeat"
  exit 0
fi
cat > "$NOTIFY_LOG/$n.stdin"
printf '%s' "$1" > "$NOTIFY_LOG/$n.args"
cp "$1" "$NOTIFY_LOG/$n.deployment"
ls "$(dirname "$1")" > "$NOTIFY_LOG/$n.dir"
exit "\${FAKE_NOTIFY_EXIT:-0}"
`;

export function world(t: TestContext): World {
  const root = tempDir(t);
  const configFile = join(root, 'run/heat-config');
  const deployedDir = join(root, 'deployed');
  const hooksDir = join(root, 'hooks');
  const notifyLog = join(root, 'notify-log');
  mkdirSync(notifyLog, { recursive: true });
  mkdirSync(hooksDir, { recursive: true });
  const notify = writeExecutable(join(root, 'bin/fake-notify'), FAKE_NOTIFY);
  const env: NodeJS.ProcessEnv = {
    HEARTH_ROOT: root,
    HEAT_SHELL_CONFIG: configFile,
    HEAT_CONFIG_DEPLOYED: deployedDir,
    HEAT_CONFIG_HOOKS: hooksDir,
    HEAT_CONFIG_NOTIFY: notify,
    NOTIFY_LOG: notifyLog,
  };
  const calls = (suffix: string) =>
    readdirSync(notifyLog)
      .filter((name) => name.endsWith(suffix))
      .sort();
  return {
    root,
    configFile,
    deployedDir,
    hooksDir,
    notifyLog,
    env,
    deployments(list) {
      mkdirSync(dirname(configFile), { recursive: true });
      writeFileSync(configFile, JSON.stringify(list), { mode: 0o644 });
    },
    hook(name, body) {
      return writeExecutable(join(hooksDir, name), `#!/bin/sh\n${body}\n`);
    },
    notified() {
      return calls('.args').map((name) => {
        const base = name.slice(0, -'.args'.length);
        return {
          file: readFileSync(join(notifyLog, name), 'utf8'),
          signal: JSON.parse(readFileSync(join(notifyLog, `${base}.stdin`), 'utf8')) as Record<string, unknown>,
        };
      });
    },
    heartbeats() {
      return calls('.heartbeat').map((name) => readFileSync(join(notifyLog, name), 'utf8'));
    },
  };
}

/** A deployment as Heat puts it in the list. */
export function deployment(id: string, group: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    name: `config-${id}`,
    group,
    creation_time: '2025-01-01T00:00:00Z',
    config: 'echo hi',
    options: {},
    outputs: [],
    inputs: [
      { name: 'deploy_action', type: 'String', value: 'CREATE' },
      { name: 'deploy_signal_transport', type: 'String', value: 'NO_SIGNAL' },
    ],
    ...extra,
  };
}

/** How a bin run ended. */
export interface BinRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the heat-config bin with `env` added to process.env. */
export function runBin(args: string[], env: NodeJS.ProcessEnv, options: { timeoutMs?: number } = {}): Promise<BinRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Whether `path` exists. */
export function exists(path: string): boolean {
  return existsSync(path);
}

/** Log records (one JSON object per line) from a run's stderr. */
export function logRecords(stderr: string): Array<Record<string, unknown>> {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Waits until `check` is true, polling every 20 ms, or fails after `timeoutMs`. */
export async function waitFor(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Whether `pid` is a running process (a zombie waiting to be reaped counts as ended). */
export function isRunning(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
  } catch {
    return false;
  }
}
