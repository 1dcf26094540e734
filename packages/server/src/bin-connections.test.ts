// A real `hearth-server` under a low open-files limit (ulimit -n): every waiting agent holds a
// connection, and the one past the limit must be refused with a line in the log that says what to
// raise, while descriptors stay free for the store and the agents already waiting are served.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import { MAX_WAITING_PER_CREDENTIAL } from './routes/guest/index.ts';

const BIN = new URL('./bin.ts', import.meta.url).pathname;
const OPEN_FILES = 256;
const ADMIN = { 'x-auth-token': 'test-admin-token' };

interface Reply {
  status: number | string;
  body: string;
  etag?: string;
}

/** One request to 127.0.0.1:port; a connection error is the reply's status (`err:ECONNRESET`). */
function call(port: number, method: string, path: string, headers: Record<string, string>, body?: unknown, agent?: Agent): Promise<Reply> {
  return new Promise((resolve) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: agent ?? false,
        headers: { ...headers, ...(data ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: text, etag: res.headers.etag }));
        res.on('error', (error: NodeJS.ErrnoException) => resolve({ status: `err:${error.code}`, body: '' }));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ status: `err:${error.code}`, body: '' }));
    req.end(data);
  });
}

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** The JSON log lines written so far. */
function logLines(stderr: string): Array<Record<string, unknown>> {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

test(
  'at the open-files limit, connections past it are refused with a log line naming the limit; descriptors stay free and the waiting agents are served',
  { skip: process.platform !== 'linux' && 'reads /proc' },
  async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hearth-fd-'));
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HEARTH_ADMIN_TOKEN: ADMIN['x-auth-token'],
      HEARTH_SECRET_KEY: 'test-secret-key-0123456789abcdef',
    };
    for (const name of ['NODE_EXTRA_CA_CERTS', 'HEARTH_DATABASE_URL', 'HEARTH_LISTEN', 'HEARTH_DATA_DIR', 'HEARTH_PUBLIC_URL'])
      delete env[name];
    // `exec`: the limit is the server's own, and its pid is the child's.
    const child: ChildProcess = spawn(
      'sh',
      [
        '-c',
        `ulimit -n ${OPEN_FILES} && exec "$0" --import tsx "$1" serve --listen 127.0.0.1:${port} --data-dir "$2"`,
        process.execPath,
        BIN,
        dataDir,
      ],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const admin = new Agent({ keepAlive: true, maxSockets: 1 });
    const polls: Array<Promise<Reply>> = [];
    try {
      for (let i = 0; i < 300 && !stdout.includes('listening on'); i++) await sleep(100);
      assert.match(stdout, /listening on/, stderr);
      const openFiles = () => readdirSync(`/proc/${child.pid}/fd`).length;

      // The operator's connection is opened first and kept: it is one of those accepted.
      const configReply = await call(
        port,
        'POST',
        '/v1/default/software_configs',
        ADMIN,
        { name: 'c', group: 'script', config: 'x' },
        admin,
      );
      const configId = (JSON.parse(configReply.body) as { software_config: { id: string } }).software_config.id;
      // A credential may hold MAX_WAITING_PER_CREDENTIAL long-polls at once: the agents are spread over enough VMs.
      const vms: Array<{ id: string; auth: Record<string, string>; etag: string }> = [];
      for (let i = 0; i < OPEN_FILES / MAX_WAITING_PER_CREDENTIAL; i++) {
        const registered = await call(port, 'POST', '/v1/default/servers', ADMIN, { name: `vm${i}` }, admin);
        assert.equal(registered.status, 201, registered.body);
        const { server, credential } = JSON.parse(registered.body) as { server: { id: string }; credential: { token: string } };
        const auth = { authorization: `Bearer ${credential.token}` };
        const { etag } = await call(port, 'GET', '/v1/guest/metadata', auth, undefined, admin);
        vms.push({ id: server.id, auth, etag: etag! });
      }

      // More agents wait than the limit has room for, each on a connection of its own.
      for (let i = 0; i < OPEN_FILES; i++) {
        const vm = vms[i % vms.length]!;
        polls.push(call(port, 'GET', '/v1/guest/metadata?wait=30', { ...vm.auth, 'if-none-match': vm.etag }));
      }
      const refusedLine = () => logLines(stderr).find((line) => line.level === 40 && /refused \d+ connection/.test(String(line.msg)));
      for (let i = 0; i < 200 && !refusedLine(); i++) await sleep(50);
      const line = refusedLine();
      assert.ok(line, `no log line about refused connections:\n${stderr}`);
      assert.match(String(line.msg), new RegExp(`ulimit -n ${OPEN_FILES}\\b.*raise it`));
      const max = Number(line.maxConnections);
      assert.ok(max > 0 && max < OPEN_FILES, `maxConnections ${max}`);
      await sleep(300);
      assert.ok(openFiles() <= OPEN_FILES - 32, `descriptors left free for the store: ${openFiles()} of ${OPEN_FILES} in use`);

      // The agents that got in are still served: a deployment for each VM wakes every one.
      for (const vm of vms) {
        const created = await call(
          port,
          'POST',
          '/v1/default/software_deployments',
          ADMIN,
          { config_id: configId, server_id: vm.id },
          admin,
        );
        assert.equal(created.status, 200, created.body);
      }
      const replies = await Promise.all(polls);
      const woken = replies.filter((reply) => reply.status === 200).length;
      const reset = replies.filter((reply) => typeof reply.status === 'string').length;
      assert.equal(
        woken + reset,
        OPEN_FILES,
        JSON.stringify(replies.filter((reply) => reply.status !== 200 && typeof reply.status === 'number')),
      );
      assert.ok(woken >= max - 8 && woken < max, `${woken} agents woken, ${reset} refused, room for ${max} connections`);
      // Once they are gone, new connections are taken again.
      assert.equal((await call(port, 'GET', '/healthz', {})).status, 200);
    } finally {
      admin.destroy();
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
      await Promise.all(polls);
      if (existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true });
    }
  },
);
