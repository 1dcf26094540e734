// Agent benchmarks (`npm run bench:agents`, also run by `npm run bench`): what a VM pays for
// hearth's agents, beside Debian's originals, measured in one run on this machine.
//   1. idle RSS: our os-collect-config daemon, run from its single-file bundle
//      (scripts/bundle-agents.mjs), and Debian's os-collect-config, both polling the same loopback
//      `request` URL every second; RSS read from /proc after they settle (goal: ours ≤ 1.0× and
//      under 60 MB).
//   2. deployment round trip: create -> the agents (bundles, hearth long-poll transport) run a
//      trivial script hook -> COMPLETE, measured by the operator, median of 20 (goal < 1.5 s).
//   3. cfn-signal wall time: our bundle and our single executable (dist/hearth-agent, built by
//      `npm run build:agent`, which `npm run bench:agents` runs first) vs Debian's heat-cfntools,
//      signalling the same hearth-server wait condition, interleaved (test/bench/cfn-signal.ts; goal ≤ 1.0×).
// Only 127.0.0.1 is contacted; every process is killed at the end and the temp dirs removed.
// Knobs (env): BENCH_AGENT_SETTLE_S (20 = seconds both daemons poll before RSS is read),
// BENCH_AGENT_ROUNDS (3).

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentLoop } from '../helpers/agent-loop.ts';
import { benchCfnSignal } from './cfn-signal.ts';
import { freePort, spawnServer } from '../helpers/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const SETTLE_S = Number(process.env.BENCH_AGENT_SETTLE_S ?? 20);
const ROUNDS = Number(process.env.BENCH_AGENT_ROUNDS ?? 3);
const GOAL_RSS_RATIO = 1.0;
const GOAL_RSS_MB = 60;
const ROUND_TRIPS = Number(process.env.BENCH_ROUND_TRIPS ?? 20);
const GOAL_ROUND_TRIP_MS = 1500;

const log = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? NaN;
};

/** Environment for the agents: no NODE_EXTRA_CA_CERTS (it costs ~44 ms and 2 MB per node start), no proxies. */
function agentEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, LANG: 'C.UTF-8', no_proxy: '127.0.0.1' };
  return env;
}

/** Resident set size of a process in MiB, from /proc/PID/status. */
function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1] ?? NaN);
  return kib / 1024;
}

/** A loopback `request` source: a JSON document with Last-Modified, answering HEAD and GET. */
async function requestSource(): Promise<{ server: Server; url: string }> {
  const body = JSON.stringify({ deployments: [], hearth: { bench: true } });
  const lastModified = new Date().toUTCString();
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'last-modified': lastModified, 'content-length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/metadata` };
}

/** Starts an os-collect-config daemon (ours or Debian's) polling `url` every second with a private cache. */
function startCollector(command: string[], url: string, dir: string): ChildProcess {
  const conf = join(dir, 'os-collect-config.conf');
  writeFileSync(conf, '[DEFAULT]\n');
  const args = [
    '--config-file',
    conf,
    '--cachedir',
    join(dir, 'cache'),
    '--backup-cachedir',
    join(dir, 'backup'),
    '--polling-interval',
    '1',
    '--min-polling-interval',
    '1',
    '--request-metadata-url',
    url,
    '--command',
    'true',
    'request',
  ];
  const [bin, ...pre] = command;
  return spawn(bin!, [...pre, ...args], { env: agentEnv(), stdio: 'ignore' });
}

/** Median time from creating a deployment to seeing it COMPLETE, through the real agent loop. */
async function roundTrip(): Promise<{ median: number; p90: number; all: number[] }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-bench-rt-'));
  const server = await spawnServer(dataDir, await freePort());
  const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${server.url}${path}`, {
      method,
      headers: { 'x-auth-token': server.token, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  const vm = await call<{ server: { id: string }; os_collect_config_conf: string }>('POST', '/v1/default/servers', { name: 'bench-vm' });
  const loop = agentLoop(vm.os_collect_config_conf);
  loop.start();
  const times: number[] = [];
  try {
    const { software_config: config } = await call<{ software_config: { id: string } }>('POST', '/v1/default/software_configs', {
      group: 'script',
      config: '#!/bin/sh\necho ok\n',
    });
    for (let i = 0; i <= ROUND_TRIPS; i++) {
      const started = performance.now();
      const { software_deployment: d } = await call<{ software_deployment: { id: string } }>('POST', '/v1/default/software_deployments', {
        config_id: config.id,
        server_id: vm.server.id,
        name: `rt-${i}`,
      });
      for (;;) {
        const { software_deployment: now } = await call<{ software_deployment: { status: string } }>(
          'GET',
          `/v1/default/software_deployments/${d.id}?wait=30`,
        );
        if (now.status === 'COMPLETE') break;
        if (now.status !== 'IN_PROGRESS') throw new Error(`round trip ${i} ended ${now.status}`);
      }
      if (i > 0) times.push(performance.now() - started); // the first one warms the page cache
      log(`round trip ${i}: ${(performance.now() - started).toFixed(0)} ms${i === 0 ? ' (warm-up, not counted)' : ''}`);
    }
  } finally {
    await loop.close();
    server.child.kill('SIGTERM');
    await server.exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
  const sorted = [...times].sort((a, b) => a - b);
  return { median: median(times), p90: sorted[Math.floor(sorted.length * 0.9)] ?? NaN, all: times };
}

async function main(): Promise<void> {
  const debian = spawnSync('sh', ['-c', 'command -v os-collect-config'], { encoding: 'utf8' }).stdout.trim();
  if (!debian) {
    log('agents: Debian os-collect-config is not installed (apt-get install -y python3-os-collect-config); nothing to compare with');
    process.exitCode = 1;
    return;
  }
  const bundleDir = mkdtempSync(join(tmpdir(), 'hearth-bench-agents-'));
  const built = spawnSync(process.execPath, [join(ROOT, 'scripts/bundle-agents.mjs'), bundleDir], { encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`bundling failed: ${built.stderr}`);
  const ours = [process.execPath, join(bundleDir, 'os-collect-config.mjs')];
  const source = await requestSource();
  const children: ChildProcess[] = [];
  const watchdog = setTimeout(
    () => {
      for (const child of children) child.kill('SIGKILL');
      process.exit(2);
    },
    (SETTLE_S + 30) * ROUNDS * 1000,
  ).unref();
  const results = { ours: [] as number[], debian: [] as number[] };
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      const dirs = { ours: mkdtempSync(join(tmpdir(), 'occ-ours-')), debian: mkdtempSync(join(tmpdir(), 'occ-debian-')) };
      const oursChild = startCollector(ours, source.url, dirs.ours);
      const debianChild = startCollector([debian], source.url, dirs.debian);
      children.push(oursChild, debianChild);
      await sleep(SETTLE_S * 1000);
      for (const [name, child] of [
        ['ours', oursChild],
        ['debian', debianChild],
      ] as const) {
        if (child.exitCode !== null || child.pid === undefined)
          throw new Error(`${name} os-collect-config exited early (${child.exitCode})`);
        results[name].push(rssMiB(child.pid));
      }
      for (const child of [oursChild, debianChild]) child.kill('SIGTERM');
      await sleep(500);
      for (const dir of Object.values(dirs)) rmSync(dir, { recursive: true, force: true });
      log(`agents round ${round}: RSS ours ${results.ours.at(-1)!.toFixed(1)} MiB, Debian ${results.debian.at(-1)!.toFixed(1)} MiB`);
    }
  } finally {
    clearTimeout(watchdog);
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    source.server.close();
    rmSync(bundleDir, { recursive: true, force: true });
  }
  const ours_ = median(results.ours);
  const theirs = median(results.debian);
  const ratio = ours_ / theirs;
  const ok = ratio <= GOAL_RSS_RATIO && ours_ < GOAL_RSS_MB;
  log('');
  log('| agent | idle RSS polling a request URL every 1 s (median of rounds) |');
  log('| --- | --- |');
  log(`| hearth os-collect-config (bundle) | ${ours_.toFixed(1)} MiB |`);
  log(`| Debian os-collect-config 12.0.0 | ${theirs.toFixed(1)} MiB |`);
  log(`| ratio (goal ≤ ${GOAL_RSS_RATIO} and < ${GOAL_RSS_MB} MiB) | ${ratio.toFixed(2)} ${ok ? 'met' : 'NOT met'} |`);

  log('');
  const rt = await roundTrip();
  log('| deployment round trip, create -> script hook -> COMPLETE (hearth transport, bundles) | ms |');
  log('| --- | --- |');
  log(`| median of ${rt.all.length} | ${rt.median.toFixed(0)} |`);
  log(`| p90 | ${rt.p90.toFixed(0)} |`);
  log(`| goal < ${GOAL_ROUND_TRIP_MS} ms | ${rt.median < GOAL_ROUND_TRIP_MS ? 'met' : 'NOT met'} |`);

  log('');
  await benchCfnSignal({ log });
}

await main();
