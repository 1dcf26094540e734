// cfn-signal wall time, ours (single-file bundle from scripts/bundle-agents.mjs, run with plain node)
// beside Debian's (heat-cfntools 1.4.2: python3 + boto import + curl), both signalling the same
// hearth-server wait condition on 127.0.0.1, interleaved (hyperfine-style: alternate which goes first),
// 20 timed runs each after warm-ups, median reported. Every signal must be acknowledged: ours exits
// non-zero otherwise, and the condition's received count is checked at the end for both.
// Run alone: `tsx test/bench/cfn-signal.ts`; or call benchCfnSignal() from a bench runner.
// Debian's cfn-signal runs directly (always with -i, so it never asks 169.254.169.254); it appends to
// /var/log/cfn-signal.log as it always does.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, spawnServer } from '../helpers/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

/** Options of benchCfnSignal. */
export interface CfnSignalBenchOptions {
  /** Timed runs of each client. Default 20 (BENCH_CFN_SIGNAL_RUNS). */
  runs?: number;
  /** Untimed runs of each first. Default 3. */
  warmups?: number;
  /** A directory holding cfn-signal.mjs already bundled; default: bundle into a temp dir. */
  bundleDir?: string;
  /**
   * The single executable (`npm run build:agent` → dist/hearth-agent), timed as a third client
   * (`hearth-agent cfn-signal …`) when it exists. Default: dist/hearth-agent if built.
   */
  seaPath?: string;
  log?: (line: string) => void;
}

/** Wall times in ms, per client. */
export interface CfnSignalBenchResult {
  ours: number[];
  debian: number[];
  /** The single executable's times; empty when it was not built. */
  sea: number[];
  oursMedian: number;
  debianMedian: number;
  /** ours / Debian's median: the goal is ≤ 1.0. */
  ratio: number;
  /** Signals the wait condition received (every run, warm-ups included, of both clients). */
  received: number;
  /** A markdown table of the result. */
  table: string;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/** The clients' environment: minimal, no NODE_EXTRA_CA_CERTS (it costs ~44 ms per node start), no proxies. */
function clientEnv(): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LANG: 'C.UTF-8',
    no_proxy: '127.0.0.1',
    HEARTH_ROOT: mkdtempSync(join(tmpdir(), 'bench-cfn-signal-root-')),
  };
}

/** Runs a command to completion; wall time in ms from spawn to exit. */
function timed(command: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ ms: number; code: number | null; stderr: string }> {
  const started = performance.now();
  const child = spawn(command, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ ms: performance.now() - started, code, stderr });
    });
  });
}

/** Measures both clients signalling one hearth-server wait condition; throws if a signal was not acknowledged. */
export async function benchCfnSignal(options: CfnSignalBenchOptions = {}): Promise<CfnSignalBenchResult> {
  const runs = options.runs ?? Number(process.env.BENCH_CFN_SIGNAL_RUNS ?? 20);
  const warmups = options.warmups ?? 3;
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  if (spawnSync('sh', ['-c', 'command -v cfn-signal'], { stdio: 'ignore' }).status !== 0)
    throw new Error('Debian cfn-signal is not installed: apt-get install -y heat-cfntools');

  const ownBundle = options.bundleDir === undefined;
  const bundleDir = options.bundleDir ?? mkdtempSync(join(tmpdir(), 'bench-cfn-signal-bundle-'));
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-cfn-signal-data-'));
  if (ownBundle) {
    const built = spawnSync(process.execPath, [join(ROOT, 'scripts/bundle-agents.mjs'), bundleDir], { encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`bundling the agents failed: ${built.stderr}`);
  }
  const server = await spawnServer(dataDir, await freePort());
  const env = clientEnv();
  try {
    const call = async (method: string, path: string, body: unknown) => {
      const response = await fetch(`${server.url}/v1/default${path}`, {
        method,
        headers: { 'x-auth-token': server.token, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
      return (await response.json()) as Record<string, unknown>;
    };
    await call('POST', '/stacks', { stack_name: 'bench' });
    const seaPath = options.seaPath ?? join(ROOT, 'dist/hearth-agent');
    const withSea = existsSync(seaPath);
    const total = (withSea ? 3 : 2) * (runs + warmups);
    const created = (await call('POST', '/stacks/bench/wait_conditions', { name: 'ready', count: total + 1, timeout: 3600 }))
      .wait_condition as {
      handle: { cfn_url: string };
    };
    const url = created.handle.cfn_url;
    const clients = {
      ours: (id: string) => timed(process.execPath, [join(bundleDir, 'cfn-signal.mjs'), '-i', id, '-r', 'bench', '-d', 'x', url], env),
      debian: (id: string) => timed('cfn-signal', ['-i', id, '-r', 'bench', '-d', 'x', url], env),
      sea: (id: string) => timed(seaPath, ['cfn-signal', '-i', id, '-r', 'bench', '-d', 'x', url], env),
    };
    const times = { ours: [] as number[], debian: [] as number[], sea: [] as number[] };
    const names = withSea ? (['ours', 'debian', 'sea'] as const) : (['ours', 'debian'] as const);
    for (let i = 0; i < warmups + runs; i++) {
      // Rotate who goes first, so no client always runs on a warmer machine.
      const order = names.map((_, k) => names[(i + k) % names.length]!);
      for (const name of order) {
        const result = await clients[name](`${name}-${i}`);
        if (result.code !== 0) throw new Error(`${name} cfn-signal run ${i} exited ${result.code}: ${result.stderr}`);
        if (i >= warmups) times[name].push(result.ms);
      }
    }
    const condition = await fetch(`${server.url}/v1/default/stacks/bench/wait_conditions/ready`, {
      headers: { 'x-auth-token': server.token },
    });
    const received = ((await condition.json()) as { wait_condition: { received: number } }).wait_condition.received;
    if (received !== total) throw new Error(`the wait condition received ${received} signals, ${total} were sent`);

    const oursMedian = median(times.ours);
    const debianMedian = median(times.debian);
    const ratio = oursMedian / debianMedian;
    const table = [
      `| cfn-signal -> hearth-server wait condition (loopback), median of ${runs} interleaved runs | wall ms | min | max |`,
      '| --- | --- | --- | --- |',
      `| hearth cfn-signal (bundle, node ${process.versions.node}) | ${oursMedian.toFixed(0)} | ${Math.min(...times.ours).toFixed(0)} | ${Math.max(...times.ours).toFixed(0)} |`,
      `| Debian cfn-signal (heat-cfntools, python3 + curl) | ${debianMedian.toFixed(0)} | ${Math.min(...times.debian).toFixed(0)} | ${Math.max(...times.debian).toFixed(0)} |`,
      `| ratio ours/Debian (goal ≤ 1.0) | ${ratio.toFixed(2)} ${ratio <= 1 ? 'met' : 'NOT met'} | | |`,
      ...(withSea
        ? [
            `| hearth-agent cfn-signal (single executable) | ${median(times.sea).toFixed(0)} | ${Math.min(...times.sea).toFixed(0)} | ${Math.max(...times.sea).toFixed(0)} |`,
            `| ratio single executable/Debian (goal ≤ 1.0) | ${(median(times.sea) / debianMedian).toFixed(2)} ${median(times.sea) <= debianMedian ? 'met' : 'NOT met'} | | |`,
          ]
        : ['| hearth-agent single executable | not built (`npm run build:agent`) | | |']),
    ].join('\n');
    log(table);
    return { ours: times.ours, debian: times.debian, sea: times.sea, oursMedian, debianMedian, ratio, received, table };
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(env.HEARTH_ROOT!, { recursive: true, force: true });
    if (ownBundle) rmSync(bundleDir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  await benchCfnSignal();
}
