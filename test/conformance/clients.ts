// Runs Debian's real in-guest clients (heat-cfntools, os-collect-config) in a private sandbox.
//
// As root, each run gets its own mount, network and PID namespaces (`unshare`): /etc, /var and
// /run are overlays whose writes land in a temp dir, and the network namespace holds only a
// loopback with forwarders for the 127.0.0.1 ports the run names, relayed over unix sockets to
// the test process. The cloud metadata address is unroutable there. Without unshare the clients
// run directly (see README.md).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';

/** The packaged clients this suite drives. */
export const CLIENTS = ['cfn-signal', 'cfn-get-metadata', 'os-collect-config'] as const;

/** The directories overlaid in the sandbox; every fixed path the clients touch sits under one. */
const OVERLAID = ['etc', 'var', 'run'] as const;

/** Placeholder in argv, files and env replaced by a private scratch dir of the run (e.g. for `--cachedir`). */
export const SCRATCH = '@SCRATCH@';

/** What `runClient` accepts. */
export interface RunClientOptions {
  /** Files to put in place before the run, by absolute path (e.g. /var/lib/heat-cfntools/cfn-boto-cfg) or under SCRATCH. Default none. */
  files?: Record<string, string>;
  /** Extra environment; the base is PATH, HOME (private), LANG and no_proxy=127.0.0.1, nothing inherited. Default none. */
  env?: Record<string, string>;
  /** Hard timeout; the whole process group is killed with SIGKILL when it passes. Default 30 000 ms. */
  timeoutMs?: number;
  /** Loopback ports to reach besides those named as `127.0.0.1:PORT` in argv, files or env. Default none. */
  ports?: number[];
}

/** The outcome of one run: the same fields whether it succeeded, failed or timed out. */
export interface ClientResult {
  command: string[];
  exitCode: number;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  durationMs: number;
  /** `namespace` (private mount/net/pid namespaces) or `direct` (no unshare available). */
  isolation: Isolation;
  /** Regular files the run left under /etc, /var and /run (namespace mode), by absolute path. */
  written: Record<string, string>;
}

/** How runs are isolated on this machine. */
export type Isolation = 'namespace' | 'direct';

/** True when every client in CLIENTS is on PATH. */
export function clientsInstalled(): boolean {
  return CLIENTS.every((name) => spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0);
}

/**
 * The `skip` option for a conformance test: false when the clients are installed; a message when
 * they are not on a developer machine. In CI (env CI=true) a missing client throws, so the test fails.
 */
export function skipUnlessClients(): false | string {
  if (clientsInstalled()) return false;
  const message = `Debian clients missing (${CLIENTS.join(', ')}): apt-get install -y heat-cfntools python3-os-collect-config`;
  if (process.env.CI === 'true') throw new Error(`${message} (CI=true: a missing client is a failure)`);
  return message;
}

/** True when Debian's python3-heatclient is importable by the `python3` the sandbox runs (the harness's PATH). */
export function heatclientInstalled(): boolean {
  const { PATH, LANG } = baseEnv(tmpdir());
  return spawnSync('python3', ['-c', 'import heatclient.client'], { env: { PATH, LANG }, stdio: 'ignore', timeout: 30_000 }).status === 0;
}

/** The `skip` option for the heatclient tests, as skipUnlessClients: a message, or a throw under CI=true. */
export function skipUnlessHeatclient(): false | string {
  if (heatclientInstalled()) return false;
  const message = 'python3-heatclient missing (python3 -c "import heatclient" failed): apt-get install -y python3-heatclient';
  if (process.env.CI === 'true') throw new Error(`${message} (CI=true: a missing client is a failure)`);
  return message;
}

let probed: Isolation | undefined;

/** Whether runs can be put in private namespaces here (probed once: unshare, overlayfs, loopback up). */
export function isolation(): Isolation {
  if (probed) return probed;
  const root = mkdtempSync(join(tmpdir(), 'hearth-probe-'));
  try {
    prepareOverlays(root);
    const probe = spawnSync('unshare', [...UNSHARE_FLAGS, 'sh', '-c', `${mountScript(root)} && ${LOOPBACK_UP}`], {
      stdio: 'ignore',
      timeout: 10_000,
    });
    probed = probe.status === 0 ? 'namespace' : 'direct';
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  return probed;
}

const UNSHARE_FLAGS = ['--mount', '--net', '--pid', '--fork', '--mount-proc', '--propagation', 'private', '--kill-child'];

/** Brings `lo` up in the new network namespace (python3 is a dependency of the clients; iproute2 may be absent). */
const LOOPBACK_UP = `python3 -c "import socket,fcntl,struct
s=socket.socket()
f=struct.unpack('16sH',fcntl.ioctl(s,0x8913,struct.pack('16sH',b'lo',0)))[1]
fcntl.ioctl(s,0x8914,struct.pack('16sH',b'lo',f|1))"`;

/** Inside the namespace: a TCP listener per port on 127.0.0.1, each piped to `<dir>/<port>.sock`. */
const INNER_FORWARDER = `const net = require('node:net'); const fs = require('node:fs');
const [dir, ready, ...ports] = process.argv.slice(1); let left = ports.length;
for (const port of ports) {
  net.createServer({ allowHalfOpen: true }, (c) => {
    const u = net.connect({ path: dir + '/' + port + '.sock', allowHalfOpen: true });
    c.pipe(u).pipe(c); c.on('error', () => u.destroy()); u.on('error', () => c.destroy());
    c.on('close', () => u.destroy()); u.on('close', () => c.destroy());
  }).listen(Number(port), '127.0.0.1', () => { if (--left === 0) fs.writeFileSync(ready, ''); });
}
if (ports.length === 0) fs.writeFileSync(ready, '');`;

function prepareOverlays(root: string): void {
  for (const dir of OVERLAID) {
    mkdirSync(join(root, 'upper', dir), { recursive: true });
    mkdirSync(join(root, 'work', dir), { recursive: true });
  }
}

function mountScript(root: string): string {
  return OVERLAID.map(
    (dir) => `mount -t overlay overlay -o lowerdir=/${dir},upperdir=${root}/upper/${dir},workdir=${root}/work/${dir} /${dir}`,
  ).join(' && ');
}

/** Refuses a run that could reach the cloud metadata address or the host's real client state. */
export function assertSafe(argv: string[], texts: string[]): void {
  const [program = ''] = argv;
  const name = basename(program);
  if (texts.some((text) => text.includes('169.254.'))) throw new Error('refusing a run that names a link-local (169.254.x.x) address');
  if (name === 'cfn-push-stats') throw new Error('cfn-push-stats always asks the cloud metadata address for the instance id');
  if (name === 'cfn-signal' && !argv.some((arg) => arg === '-i' || arg.startsWith('--id') || /^-i./.test(arg))) {
    throw new Error('cfn-signal needs -i ID here (without it, it asks the cloud metadata address)');
  }
  if (name === 'os-collect-config') {
    if (argv.includes('ec2') || argv.includes('zaqar')) throw new Error('os-collect-config: only loopback collectors (cfn, heat, request)');
    if (!argv.some((arg) => ['cfn', 'heat', 'request'].includes(arg))) {
      throw new Error('os-collect-config: name the collectors as positional arguments (its defaults include ec2)');
    }
    if (!argv.includes('--one-time') && !argv.includes('--print')) throw new Error('os-collect-config: pass --one-time or --print');
  }
}

function loopbackPorts(texts: string[], extra: number[]): number[] {
  const ports = new Set(extra);
  for (const text of texts) for (const match of text.matchAll(/(?:127\.0\.0\.1|localhost):(\d{1,5})/g)) ports.add(Number(match[1]));
  return [...ports];
}

/** Host side of the relay: `<dir>/<port>.sock` piped to 127.0.0.1:port. */
async function startRelays(dir: string, ports: number[]): Promise<Server[]> {
  return Promise.all(
    ports.map(
      (port) =>
        new Promise<Server>((resolve, reject) => {
          const relay = createServer({ allowHalfOpen: true }, (inner: Socket) => {
            const outer = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
            inner.pipe(outer).pipe(inner);
            for (const [a, b] of [
              [inner, outer],
              [outer, inner],
            ] as const) {
              a.on('error', () => b.destroy());
              a.on('close', () => b.destroy());
            }
          });
          relay.once('error', reject);
          relay.listen(join(dir, `${port}.sock`), () => resolve(relay));
        }),
    ),
  );
}

function readWritten(upper: string): Record<string, string> {
  const written: Record<string, string> = {};
  const walk = (dir: string, absolute: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const stat = lstatSync(path);
      if (stat.isDirectory()) walk(path, `${absolute}/${name}`);
      else if (stat.isFile() && stat.size <= 1_000_000) written[`${absolute}/${name}`] = readFileSync(path, 'utf8');
    }
  };
  for (const dir of OVERLAID) walk(join(upper, dir), `/${dir}`);
  return written;
}

function baseEnv(home: string): Record<string, string> {
  return {
    PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    HOME: home,
    LANG: 'C.UTF-8',
    no_proxy: '127.0.0.1,localhost',
    NO_PROXY: '127.0.0.1,localhost',
  };
}

/**
 * Runs one client (`argv[0]` on PATH) in a private sandbox with `files` in place, and collects its
 * output. Never rejects for the client's own failure (that is in the result); rejects only when
 * the run is unsafe (see assertSafe) or cannot be set up.
 */
export async function runClient(argv: string[], options: RunClientOptions = {}): Promise<ClientResult> {
  const root = mkdtempSync(join(tmpdir(), 'hearth-client-'));
  if (OVERLAID.some((dir) => root.startsWith(`/${dir}/`))) throw new Error(`TMPDIR (${tmpdir()}) must not be under /etc, /var or /run`);
  const scratch = join(root, 'scratch');
  const fill = (text: string): string => text.replaceAll(SCRATCH, scratch);
  const command = argv.map(fill);
  const files = Object.entries(options.files ?? {}).map(([path, content]) => [fill(path), fill(content)] as const);
  const env = Object.fromEntries(Object.entries(options.env ?? {}).map(([key, value]) => [key, fill(value)]));
  const texts = [...command, ...files.flatMap(([path, content]) => [path, content]), ...Object.values(env)];
  const mode = isolation();
  const relays: Server[] = [];
  const placed: string[] = [];
  try {
    assertSafe(command, texts);
    mkdirSync(join(root, 'home'), { recursive: true });
    mkdirSync(scratch, { recursive: true });
    for (const [path, content] of files.filter(([path]) => path.startsWith(`${scratch}/`))) {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, content);
    }
    const fixedFiles = files.filter(([path]) => !path.startsWith(`${scratch}/`));
    let spawnArgs: string[];
    if (mode === 'namespace') {
      prepareOverlays(root);
      for (const [path, content] of fixedFiles) {
        const target = join(root, 'upper', path);
        mkdirSync(dirname(target), { recursive: true });
        writeFileSync(target, content);
      }
      const ports = loopbackPorts(texts, options.ports ?? []);
      mkdirSync(join(root, 'sock'));
      relays.push(...(await startRelays(join(root, 'sock'), ports)));
      const ready = join(root, 'ready');
      const script = [
        'set -e',
        mountScript(root),
        LOOPBACK_UP,
        `"${process.execPath}" -e "$HEARTH_FORWARDER" "${root}/sock" "${ready}" ${ports.join(' ')} &`,
        `n=0; while [ ! -e "${ready}" ]; do n=$((n+1)); [ $n -lt 500 ] || { echo 'forwarder not ready' >&2; exit 125; }; sleep 0.01; done`,
        'unset HEARTH_FORWARDER',
        'set +e; "$@"; rc=$?; exit $rc',
      ].join('\n');
      spawnArgs = ['unshare', ...UNSHARE_FLAGS, 'sh', '-c', script, 'sandbox', ...command];
    } else {
      for (const [path, content] of fixedFiles) {
        if (existsSync(path)) throw new Error(`${path} exists on this machine and there is no mount namespace: not overwriting it`);
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, content);
        placed.push(path);
      }
      spawnArgs = command;
    }
    const childEnv = { ...baseEnv(join(root, 'home')), ...env, ...(mode === 'namespace' ? { HEARTH_FORWARDER: INNER_FORWARDER } : {}) };
    const result = await spawnWithTimeout(spawnArgs, childEnv, options.timeoutMs ?? 30_000);
    return { ...result, command, isolation: mode, written: mode === 'namespace' ? readWritten(join(root, 'upper')) : {} };
  } finally {
    await Promise.all(relays.map((relay) => new Promise((resolve) => relay.close(resolve))));
    for (const path of placed) rmSync(path, { force: true });
    rmSync(root, { recursive: true, force: true });
  }
}

type SpawnOutcome = Pick<ClientResult, 'exitCode' | 'signal' | 'stdout' | 'stderr' | 'timedOut' | 'durationMs'>;

function spawnWithTimeout(argv: string[], env: Record<string, string>, timeoutMs: number): Promise<SpawnOutcome> {
  const started = Date.now();
  const [program, ...args] = argv as [string, ...string[]];
  return new Promise((resolve) => {
    const child = spawn(program, args, { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const killGroup = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, timeoutMs);
    let finished = false;
    const finish = (exitCode: number, signal: NodeJS.Signals | null): void => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      killGroup();
      resolve({ exitCode, signal, stdout, stderr, timedOut, durationMs: Date.now() - started });
    };
    child.once('error', (error) => {
      stderr += `${String(error)}\n`;
      finish(127, null);
    });
    child.once('close', (code, signal) => finish(code ?? 128, signal));
  });
}

// Operator calls the conformance tests make (native API, project `default`), kept beside the
// harness so that each test file reads as client runs and assertions.

/** The config `deployScript` deploys by default. */
export const SCRIPT = '#!/bin/sh\necho hi';

/** The parts of a running hearth-server the operator helpers need. */
export interface HearthEndpoint {
  url: string;
  token: string;
}

/** Reply to POST /v1/default/servers, as the conformance tests read it. */
export interface CreatedServer {
  server: { id: string; name: string; stack_name: string; resource_name: string };
  credential: { access_key_id: string; secret_access_key: string; token: string };
  os_collect_config: Record<string, Record<string, string>>;
  os_collect_config_conf: string;
}

/** A wait condition as GET returns it (the fields the tests check). */
export interface WaitConditionView {
  name: string;
  status: 'IN_PROGRESS' | 'COMPLETE' | 'FAILED';
  status_reason: string | null;
  received: number;
  data: Record<string, unknown>;
  signals: Array<{ id: string; status: string; reason: string | null; data: unknown }>;
  handle: { cfn_url: string; endpoint: string; token: string; curl_cli: string; signal_url: string };
}

/** Operator helpers against `/v1/default`; each throws with the status and body on a non-2xx reply. */
export function operatorApi(server: HearthEndpoint) {
  const call = async (method: string, path: string, body?: unknown): Promise<Record<string, unknown>> => {
    const response = await fetch(`${server.url}/v1/default${path}`, {
      method,
      headers: { 'x-auth-token': server.token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} /v1/default${path} answered ${response.status}: ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  return {
    createStack: async (name: string) => (await call('POST', '/stacks', { stack_name: name })).stack as { id: string; stack_name: string },
    createWaitCondition: async (stack: string, body: { name: string; count: number; timeout: number }) =>
      (await call('POST', `/stacks/${stack}/wait_conditions`, body)).wait_condition as WaitConditionView,
    waitCondition: async (stack: string, name: string) =>
      (await call('GET', `/stacks/${stack}/wait_conditions/${name}`)).wait_condition as WaitConditionView,
    createServer: async (body: { name: string; software_config_transport: string; stack?: string }) =>
      (await call('POST', '/servers', body)) as unknown as CreatedServer,
    /** Creates a `script` config (default SCRIPT) and deploys it to the server; returns the deployment id. */
    deployScript: async (serverId: string, script = SCRIPT) => {
      const config = (await call('POST', '/software_configs', { name: 'hello', group: 'script', config: script })).software_config as {
        id: string;
      };
      const deployment = (await call('POST', '/software_deployments', { config_id: config.id, server_id: serverId }))
        .software_deployment as { id: string };
      return deployment.id;
    },
  };
}

/** The server's metadata document as its own agent reads it (`GET /v1/guest/metadata`), to compare with what a client fetched. */
export async function guestMetadata(server: HearthEndpoint, created: CreatedServer): Promise<Record<string, unknown>> {
  const response = await fetch(`${server.url}/v1/guest/metadata`, { headers: { authorization: `Bearer ${created.credential.token}` } });
  if (!response.ok) throw new Error(`GET /v1/guest/metadata answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

/**
 * Asserts that a metadata document's `deployments` list is exactly the one deployment the test
 * made: an entry is a derived config with its own id, so it is recognised by the deployment id in
 * its inputs (signal URL, deploy_stack_id) and by its config text.
 */
export function assertOnlyDeployment(metadata: Record<string, unknown>, deploymentId: string, config: string): void {
  const deployments = metadata.deployments as Array<{ config: unknown }> | undefined;
  assert.ok(Array.isArray(deployments), `no deployments list in ${JSON.stringify(metadata)}`);
  assert.equal(deployments.length, 1, `one deployment expected: ${JSON.stringify(deployments)}`);
  assert.ok(
    JSON.stringify(deployments[0]).includes(deploymentId),
    `deployment ${deploymentId} not named in ${JSON.stringify(deployments[0])}`,
  );
  assert.equal(deployments[0]!.config, config);
}
