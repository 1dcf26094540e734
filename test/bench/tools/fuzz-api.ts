// Diagnostic (not run by npm test): a seeded, bounded fuzzer of the native and guest HTTP API. It
// starts hearth-server as a process on 127.0.0.1 (fresh data dir), creates fixtures, then sends
// mutated requests to every route (bad types, numbers, unicode, nesting, duplicate keys, ids,
// query strings, headers, bodies, methods, credentials). Each reply must be < 500, and a 4xx must
// carry a coded body (`error.code` ERR_…). After every request that was not a 2xx write, a snapshot
// of the stored state (lists of everything) must equal the one before it. Usage:
//   node --import tsx test/bench/tools/fuzz-api.ts [requests=20000] [seed=1] [--database-url URL]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { freePort } from '../../helpers/server.ts';

const args = process.argv.slice(2);
const dbFlag = args.indexOf('--database-url');
const databaseUrl = dbFlag >= 0 ? args.splice(dbFlag, 2)[1] : undefined;
const REQUESTS = Number(args[0] ?? 20_000);
const SEED = Number(args[1] ?? 1);
const TOKEN = 'fuzz-admin-token-0123456789';
const P = '/v1/default';

// mulberry32: small, seeded, reproducible.
let seedState = SEED >>> 0;
function rand(): number {
  seedState = (seedState + 0x6d2b79f5) >>> 0;
  let t = seedState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
const chance = (p: number) => rand() < p;

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}
interface Req {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** A raw body (already serialised), or undefined for none. */
  body?: string | Buffer;
  /** Send the body chunked with a broken chunk (raw socket). */
  brokenChunk?: boolean;
}

const dataDir = mkdtempSync(join(tmpdir(), 'hearth-fuzz-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
let stderr = '';
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    'packages/server/src/bin.ts',
    'serve',
    '--listen',
    `127.0.0.1:${port}`,
    '--data-dir',
    dataDir,
    ...(databaseUrl ? ['--database-url', databaseUrl] : []),
    '--log-level',
    'error',
  ],
  {
    cwd: new URL('../../..', import.meta.url).pathname,
    env: { ...process.env, HEARTH_ADMIN_TOKEN: TOKEN },
    stdio: ['ignore', 'ignore', 'pipe'],
  },
);
child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
let exited = false;
child.once('exit', () => (exited = true));
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

function send(req: Req, timeoutMs = 5000): Promise<Reply> {
  if (req.brokenChunk) return sendRaw(req, timeoutMs);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...req.headers };
    if (req.body !== undefined && headers['transfer-encoding'] === undefined) headers['content-length'] = Buffer.byteLength(req.body);
    const r = request(`${base}${req.path}`, { method: req.method, agent, headers, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      // An event stream that answered 200 never ends: its headers are enough.
      if (String(res.headers['content-type']).startsWith('text/event-stream')) {
        res.destroy();
        return resolve({ status: res.statusCode ?? 0, headers: res.headers, body: '' });
      }
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
      res.on('error', reject);
    });
    r.on('timeout', () => r.destroy(new Error(`timeout ${req.method} ${req.path}`)));
    r.on('error', reject);
    r.end(req.body);
  });
}

/** A chunked request whose chunk size line is not hex or lies about its length. */
function sendRaw(req: Req, timeoutMs: number): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const head = Object.entries({ ...req.headers, host: `127.0.0.1:${port}`, 'transfer-encoding': 'chunked', connection: 'close' })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    const body = String(req.body ?? '{}');
    const chunk = pick([
      `zz\r\n${body}\r\n0\r\n\r\n`,
      `${(body.length + 5).toString(16)}\r\n${body}\r\n0\r\n\r\n`,
      `${body.length.toString(16)}\r\n${body}`,
    ]);
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ status: 0, headers: {}, body: 'timeout (held open by a short chunk: acceptable)' });
    }, timeoutMs);
    socket.on('data', (c) => (data += c.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      clearTimeout(timer);
      const match = /^HTTP\/1\.1 (\d{3})/.exec(data);
      const split = data.indexOf('\r\n\r\n');
      resolve({ status: match ? Number(match[1]) : 0, headers: {}, body: split >= 0 ? data.slice(split + 4) : data });
    });
    socket.end(`${req.method} ${req.path} HTTP/1.1\r\n${head}\r\n${chunk}`);
  });
}

async function call(method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<Reply> {
  const h = body === undefined ? headers : { ...headers, 'content-type': 'application/json' };
  return send({ method, path, headers: h, body: body === undefined ? undefined : JSON.stringify(body) });
}
const ADMIN = { 'x-auth-token': TOKEN };
async function must(method: string, path: string, body?: unknown, headers: Record<string, string> = ADMIN) {
  const reply = await call(method, path, headers, body);
  if (reply.status >= 300) throw new Error(`fixture ${method} ${path}: ${reply.status} ${reply.body}`);
  return reply.body ? (JSON.parse(reply.body) as Record<string, any>) : {}; // eslint-disable-line @typescript-eslint/no-explicit-any -- fixture replies are read loosely
}

// ---- start and fixtures
const deadline = Date.now() + 30_000;
for (;;) {
  if (exited) throw new Error(`server exited: ${stderr}`);
  if (Date.now() > deadline) throw new Error('server not ready');
  if ((await fetch(`${base}/readyz`).catch(() => null))?.ok) break;
  await new Promise((r) => setTimeout(r, 100));
}
const closedPort = await freePort();
await must('POST', `${P}/stacks`, { stack_name: 'fz' });
const s1 = await must('POST', `${P}/servers`, { name: 'one', stack: 'fz', resource_name: 'vm1' });
const s2 = await must('POST', `${P}/servers`, { name: 'two' });
const s3 = await must('POST', `${P}/servers`, { name: 'gone' });
await must('DELETE', `${P}/servers/${s3.server.id}`);
const bearer = (s: Record<string, any>) => `Bearer ${s.credential.token}`; // eslint-disable-line @typescript-eslint/no-explicit-any -- fixture
const cfg = (
  await must('POST', `${P}/software_configs`, {
    name: 'c',
    group: 'script',
    config: 'echo',
    inputs: [{ name: 'a' }],
    outputs: [{ name: 'r' }],
  })
).software_config.id as string;
const d1 = (await must('POST', `${P}/software_deployments`, { config_id: cfg, server_id: s1.server.id, input_values: { a: 1 } }))
  .software_deployment.id as string;
const d2 = (await must('POST', `${P}/software_deployments`, { config_id: cfg, server_id: s2.server.id, timeout: 86400 }))
  .software_deployment.id as string;
const d3 = (await must('POST', `${P}/software_deployments`, { config_id: cfg, server_id: s1.server.id, signal_transport: 'NO_SIGNAL' }))
  .software_deployment.id as string;
await must('POST', `${P}/stacks/fz/wait_conditions`, { name: 'wc', count: 3, timeout: 40000 });
await must('POST', `${P}/stacks/fz/scaling_groups`, {
  name: 'grp',
  min_size: 1,
  max_size: 5,
  actuator: { url: `http://127.0.0.1:${closedPort}/hook` },
});
await must('POST', `${P}/stacks/fz/scaling_policies`, {
  name: 'up',
  group: 'grp',
  adjustment_type: 'change_in_capacity',
  scaling_adjustment: 1,
  cooldown: 86400,
});
await must('POST', `${P}/alarms`, {
  name: 'al',
  metric_name: 'cpu',
  statistic: 'Average',
  period: 60,
  threshold: 80,
  comparison_operator: 'GreaterThanThreshold',
});

// ---- the routes: a valid request for each, to be mutated
interface Route {
  method: string;
  path: string;
  body?: unknown;
  /** Agent routes take a server's credential. */
  agent?: boolean;
  /** Deleting or revoking a fixture: always sent with something wrong. */
  destructive?: boolean;
}
const routes: Route[] = [
  { method: 'GET', path: `${P}/servers` },
  { method: 'POST', path: `${P}/servers`, body: { name: 'n', software_config_transport: 'POLL_SERVER_CFN' } },
  { method: 'GET', path: `${P}/servers/${s1.server.id}` },
  { method: 'DELETE', path: `${P}/servers/${s2.server.id}`, destructive: true },
  { method: 'GET', path: `${P}/software_configs` },
  {
    method: 'POST',
    path: `${P}/software_configs`,
    body: { name: 'x', group: 'script', config: 'echo', inputs: [{ name: 'i', type: 'Number', default: 1 }], options: {} },
  },
  { method: 'GET', path: `${P}/software_configs/${cfg}` },
  { method: 'DELETE', path: `${P}/software_configs/${cfg}`, destructive: true },
  { method: 'GET', path: `${P}/software_deployments` },
  {
    method: 'POST',
    path: `${P}/software_deployments`,
    body: { config_id: cfg, server_id: 'vm-x', input_values: { a: 2 }, action: 'CREATE', timeout: 100000 },
  },
  { method: 'GET', path: `${P}/software_deployments/${d1}` },
  { method: 'PUT', path: `${P}/software_deployments/${d2}`, body: { status: 'IN_PROGRESS', input_values: { b: 1 }, timeout: 86400 } },
  { method: 'DELETE', path: `${P}/software_deployments/${d1}`, destructive: true },
  { method: 'GET', path: `${P}/software_deployments/${d1}/timeline` },
  { method: 'GET', path: `${P}/software_deployments/${d3}?wait=0` },
  { method: 'GET', path: `${P}/software_deployments/metadata/${s1.server.id}` },
  { method: 'GET', path: `${P}/events?limit=5` },
  { method: 'GET', path: `${P}/events/stream?after=0` },
  { method: 'GET', path: `${P}/stacks` },
  { method: 'POST', path: `${P}/stacks`, body: { stack_name: 'st' } },
  { method: 'GET', path: `${P}/stacks/fz` },
  { method: 'DELETE', path: `${P}/stacks/fz`, destructive: true },
  { method: 'GET', path: `${P}/stacks/fz/wait_conditions` },
  { method: 'POST', path: `${P}/stacks/fz/wait_conditions`, body: { name: 'w2', count: 2, timeout: 40000, max_failures: 1 } },
  { method: 'GET', path: `${P}/stacks/fz/wait_conditions/wc` },
  { method: 'POST', path: `${P}/stacks/fz/wait_conditions/wc/heartbeat`, body: { extend: 40000, message: 'm' } },
  { method: 'DELETE', path: `${P}/stacks/fz/wait_conditions/wc`, destructive: true },
  { method: 'GET', path: `${P}/stacks/fz/scaling_groups` },
  {
    method: 'POST',
    path: `${P}/stacks/fz/scaling_groups`,
    body: { name: 'g2', min_size: 0, max_size: 3, actuator: { url: `http://127.0.0.1:${closedPort}/x` } },
  },
  { method: 'GET', path: `${P}/stacks/fz/scaling_groups/grp` },
  { method: 'PATCH', path: `${P}/stacks/fz/scaling_groups/grp`, body: { min_size: 1, max_size: 6, cooldown: 86400 } },
  { method: 'DELETE', path: `${P}/stacks/fz/scaling_groups/grp`, destructive: true },
  { method: 'GET', path: `${P}/stacks/fz/scaling_groups/grp/members` },
  { method: 'POST', path: `${P}/stacks/fz/scaling_groups/grp/members`, body: { add: ['m1'], remove: ['m2'] } },
  { method: 'GET', path: `${P}/stacks/fz/scaling_policies` },
  {
    method: 'POST',
    path: `${P}/stacks/fz/scaling_policies`,
    body: { name: 'p2', group: 'grp', adjustment_type: 'percent_change_in_capacity', scaling_adjustment: 10, min_adjustment_step: 1 },
  },
  { method: 'GET', path: `${P}/stacks/fz/scaling_policies/up` },
  { method: 'DELETE', path: `${P}/stacks/fz/scaling_policies/up`, destructive: true },
  { method: 'POST', path: `${P}/stacks/fz/scaling_policies/up/rotate`, body: { url_expires_in: 3600 }, destructive: true },
  { method: 'POST', path: `${P}/stacks/fz/scaling_policies/up/revoke`, destructive: true },
  { method: 'POST', path: `${P}/stacks/fz/scaling_policies/up/signal`, body: { current: 'alarm', previous: 'ok', reason: 'r' } },
  { method: 'GET', path: `${P}/alarms` },
  {
    method: 'POST',
    path: `${P}/alarms`,
    body: {
      name: 'a2',
      metric_name: 'm',
      statistic: 'Sum',
      period: 60,
      threshold: 1,
      comparison_operator: 'LessThanThreshold',
      alarm_actions: [`http://127.0.0.1:${closedPort}/a`],
    },
  },
  { method: 'GET', path: `${P}/alarms/al` },
  { method: 'GET', path: `${P}/alarms/al/history?limit=3` },
  { method: 'DELETE', path: `${P}/alarms/al`, destructive: true },
  { method: 'GET', path: `${P}/metrics?metric_name=cpu&limit=10` },
  { method: 'GET', path: '/v1/guest/metadata', agent: true },
  {
    method: 'POST',
    path: `/v1/guest/deployments/${d1}/signal`,
    agent: true,
    body: { deploy_status_code: 0, deploy_stdout: 'o', result: 'x' },
  },
  { method: 'POST', path: `/v1/guest/deployments/${d1}/heartbeat`, agent: true, body: { message: 'alive' } },
  {
    method: 'POST',
    path: '/v1/guest/metrics',
    agent: true,
    body: { namespace: 'ns', samples: [{ metric_name: 'cpu', value: 1.5, unit: 'Percent', dimensions: { a: 'b' } }] },
  },
];

// ---- mutations
const weirdStrings = [
  '',
  ' ',
  'a'.repeat(300),
  'a'.repeat(70_000),
  '\u0000',
  'x\u0000y',
  '\u202Eevil',
  'e\u0301\u0301\u0301',
  '\uFEFF',
  '💥',
  '..',
  '.',
  '/',
  '%',
  '%00',
  '../../etc',
  'null',
  '1e999',
  '__proto__',
  'constructor',
  '{}',
  '\\',
  '"',
  '\n\r',
  'ßİıſ',
];
const weirdNumbers = [0, -1, 1.5, -0, 1e308, -1e308, 2 ** 53 + 1, 2 ** 31, -(2 ** 31) - 1, 0.1, 1e-300];
const rawNumberTokens = ['1e999', '-1e999', '1E400', '0.0000000000000000000000001', '123456789012345678901234567890', '-0', '1.0', '1e2'];
const badIds = [
  'ABCDEF01-2345-6789-ABCD-EF0123456789',
  '{abcdef01-2345-6789-abcd-ef0123456789}',
  'abcdef01-2345-6789-abcd-ef0123456789aa',
  'abcdef0123456789abcdef0123456789',
  'abcdef01-2345-6789-abcd-ef012345678g',
  '00000000-0000-0000-0000-000000000000',
  'x'.repeat(65),
  'x'.repeat(5000),
  '%2e%2e',
  '%00',
  '%ZZ',
  '%F0%9F%92%A5',
  '%ED%A0%80',
  '%C0%AF',
  'a%2Fb',
  'a:b',
  '-',
  '_',
  '..',
];

function weirdValue(depth = 0): unknown {
  switch (Math.floor(rand() * 10)) {
    case 0:
      return pick(weirdStrings);
    case 1:
      return pick(weirdNumbers);
    case 2:
      return pick([null, true, false]);
    case 3:
      return depth > 2 ? [] : [weirdValue(depth + 1), weirdValue(depth + 1)];
    case 4:
      return depth > 2 ? {} : { [pick(weirdStrings)]: weirdValue(depth + 1) };
    case 5: {
      let v: unknown = 1;
      for (let i = 0; i < pick([10, 100, 2000]); i++) v = chance(0.5) ? [v] : { a: v };
      return v;
    }
    case 6:
      return pick([
        'SUCCESS',
        'FAILURE',
        'IN_PROGRESS',
        'COMPLETE',
        'FAILED',
        'CREATE',
        'exact_capacity',
        'HEAT_SIGNAL',
        'http://127.0.0.1:1/',
      ]);
    case 7:
      return pick(badIds);
    default:
      return pick([{}, [], '', 0]);
  }
}

/** A JSON text from a value, sometimes with raw tokens JSON.stringify cannot write. */
function serialise(value: unknown): string {
  let text = JSON.stringify(value) ?? 'null';
  if (chance(0.15)) text = text.replace(/-?\d+(\.\d+)?/, pick(rawNumberTokens));
  if (chance(0.1)) text = text.replace(/"([^"\\]*)"/, '"\\ud800$1"');
  if (chance(0.05)) text = text.replace(/"([^"\\]*)"/, '"\\udfff\\u0000$1"');
  return text;
}

function mutateBody(body: unknown): { text: string | Buffer; contentType?: string } {
  const obj = body && typeof body === 'object' && !Array.isArray(body) ? { ...(body as Record<string, unknown>) } : {};
  const keys = Object.keys(obj);
  switch (Math.floor(rand() * 14)) {
    case 0: // wrong value for one field
    case 1:
    case 2:
      if (keys.length) obj[pick(keys)] = weirdValue();
      return { text: serialise(obj) };
    case 3: // missing field
      if (keys.length) delete obj[pick(keys)];
      return { text: serialise(obj) };
    case 4: // extra field
      obj[pick(['extra', '__proto__', 'constructor', 'id', 'project_id', 'status', 'toString'])] = weirdValue();
      return { text: serialise(obj) };
    case 5: {
      // duplicate keys: the last one wins in JSON.parse
      const key = keys.length ? pick(keys) : 'name';
      const text = JSON.stringify(obj);
      const extra = `${JSON.stringify(key)}:${serialise(weirdValue())}`;
      return { text: text === '{}' ? `{${extra}}` : `{${extra},${text.slice(1)}` };
    }
    case 6:
      return { text: serialise(pick([[obj], [], 'str', 1, null, true, weirdValue()])) };
    case 7:
      return {
        text: pick([
          '',
          '{',
          '{"a":',
          'nul',
          '{"a":1}}',
          '[1,]',
          '\u0000',
          '{"a":"\u0000"}',
          "{'a':1}",
          '{"a":01}',
          '{"a":NaN}',
          '{"a":Infinity}',
          '\uFEFF{}',
        ]),
      };
    case 8:
      return { text: Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc0, 0x80, 0x22, 0x7d]) };
    case 9: // odd content types
      return {
        text: serialise(obj),
        contentType: pick([
          'text/plain',
          'application/x-www-form-urlencoded',
          'application/json; charset=latin1',
          'application/json;charset=utf-16',
          'application/xml',
          'multipart/form-data; boundary=x',
          '',
          'application/JSON',
          'application/merge-patch+json',
          'application/json, text/plain',
        ]),
      };
    case 10: // string fields made huge or odd
      for (const key of keys) if (typeof obj[key] === 'string') obj[key] = pick(weirdStrings);
      return { text: serialise(obj) };
    case 11: // numeric fields made odd
      for (const key of keys)
        if (typeof obj[key] === 'number') obj[key] = pick([...weirdNumbers, String(obj[key]), `${String(obj[key])}.0`]);
      return { text: serialise(obj) };
    case 12: // nested field mutated
      for (const key of keys) {
        const v = obj[key];
        if (Array.isArray(v) && v.length)
          obj[key] = [{ ...(v[0] as object), [pick(['name', 'value', 'metric_name', 'type', 'default', 'dimensions'])]: weirdValue() }];
        else if (v && typeof v === 'object') obj[key] = { ...v, [pick(['url', 'secret', 'a', 'software_config_transport'])]: weirdValue() };
      }
      return { text: serialise(obj) };
    default:
      return { text: serialise(obj) };
  }
}

function mutatePath(path: string): string {
  const [pathname, query] = path.split('?') as [string, string | undefined];
  const parts = pathname.split('/');
  switch (Math.floor(rand() * 4)) {
    case 0: {
      // replace one segment after /v1
      const i = 2 + Math.floor(rand() * (parts.length - 2));
      parts[i] = pick([...badIds, encodeURIComponent(pick(weirdStrings)).slice(0, 3000)]);
      break;
    }
    case 1:
      parts[2] = pick(['nope', 'DEFAULT', 'guest', 'signal', '..', 'a'.repeat(65), '%00', 'default%00']);
      break;
    case 2:
      parts.push(pick(['', 'x', '..', '%2e']));
      break;
    default: {
      const i = parts.length - 1;
      parts[i] = parts[i]!.toUpperCase();
    }
  }
  return parts.join('/') + (query === undefined ? '' : `?${query}`);
}

function mutateQuery(path: string): string {
  const [pathname] = path.split('?');
  const key = pick([
    'limit',
    'marker',
    'wait',
    'after',
    'server_id',
    'metric_name',
    'namespace',
    'since',
    'token',
    'action',
    'resource_id',
    'sort_keys',
    '__proto__',
  ]);
  const value = pick([
    '1e3',
    '0x10',
    '',
    '-1',
    '0',
    '1.5',
    'NaN',
    'Infinity',
    '1001',
    '99999999999999999999',
    ' 1',
    '1 ',
    '%00',
    '%ED%A0%80',
    '%',
    encodeURIComponent('a'.repeat(2000)),
    '2020-01-01T00:00:00Z',
    'abc',
    badIds[0]!,
    d2,
  ]);
  const q = pick([
    `${key}=${value}`,
    `${key}=1&${key}=2`,
    `${key}`,
    `${key}[]=1`,
    `${key}[a]=1`,
    '&&',
    `=${value}`,
    `${key}=${value}&limit=1`,
  ]);
  return `${pathname}?${q}`;
}

const badAuths: Array<Record<string, string>> = [
  {},
  { 'x-auth-token': 'wrong' },
  { 'x-auth-token': '' },
  { 'x-auth-token': TOKEN + ' ' },
  { 'x-auth-token': 'a'.repeat(8000) },
  { authorization: 'Bearer' },
  { authorization: 'Bearer ' },
  { authorization: 'Bearer a:b:c' },
  { authorization: 'Bearer :' },
  { authorization: `Bearer ${'x'.repeat(9000)}` },
  { authorization: 'Basic YTpi' },
  { authorization: bearer(s3) },
  { authorization: bearer(s2) },
  { authorization: bearer(s1).toLowerCase() },
  { authorization: bearer(s1), 'x-auth-token': TOKEN },
  { authorization: `${bearer(s1)}x` },
];

function buildRequest(route: Route): { req: Req; mutation: string } {
  const baseHeaders: Record<string, string> = route.agent ? { authorization: bearer(s1) } : { ...ADMIN };
  let path = route.path;
  let headers = { ...baseHeaders };
  let method = route.method;
  let bodyText: string | Buffer | undefined = route.body === undefined ? undefined : JSON.stringify(route.body);
  let contentType: string | undefined = bodyText === undefined ? undefined : 'application/json';
  let brokenChunk = false;
  const kinds = ['body', 'body', 'body', 'path', 'query', 'query', 'header', 'auth', 'method', 'encoding', 'valid'];
  let kind = pick(kinds);
  if (route.destructive && !['path', 'auth', 'method'].includes(kind)) kind = pick(['path', 'auth', 'method']);
  if (kind === 'body' && route.body === undefined) kind = pick(['body-on-bodiless', 'query']);
  switch (kind) {
    case 'body': {
      const m = mutateBody(route.body);
      bodyText = m.text;
      if (m.contentType !== undefined) contentType = m.contentType;
      break;
    }
    case 'body-on-bodiless':
      bodyText = serialise(weirdValue());
      contentType = pick(['application/json', 'text/plain']);
      break;
    case 'path':
      // A destructive route's path is made wrong for sure (a trailing slash would still name the fixture).
      path = route.destructive ? `${path.slice(0, path.lastIndexOf('/'))}/${pick(badIds)}` : mutatePath(path);
      break;
    case 'query':
      path = mutateQuery(path);
      break;
    case 'header':
      Object.assign(
        headers,
        pick([
          { 'if-match': pick(['*', '"x"', 'W/"x"', '', '"', '""', 'garbage', '"a", "b"', '*, "x"', 'x'.repeat(2000)]) },
          { 'if-none-match': pick(['*', '"x"', 'W/"x"', '', '"', 'garbage', 'x'.repeat(2000)]) },
          { 'idempotency-key': pick(['', 'x'.repeat(121), 'k', '\t']) },
          { 'last-event-id': pick(['', '-1', 'abc', '1e3', '99999999999999999999999', '0x10']) },
          { accept: pick(['text/html', '*/*', 'application/xml', '']) },
        ]),
      );
      break;
    case 'auth':
      headers = { ...pick(badAuths) };
      break;
    case 'method':
      // Never a DELETE made of a valid path: the fixtures would be gone for the rest of the run.
      method = pick(['GET', 'POST', 'PUT', 'PATCH', 'OPTIONS', 'HEAD', 'TRACE', 'PROPFIND'].filter((m) => m !== route.method));
      if (method === 'TRACE' || method === 'GET' || method === 'HEAD') bodyText = undefined;
      break;
    case 'encoding':
      if (bodyText === undefined) bodyText = '{}';
      if (chance(0.5)) headers['content-encoding'] = pick(['gzip', 'deflate', 'br', 'identity', 'x-unknown']);
      else brokenChunk = true;
      contentType = 'application/json';
      break;
    default:
      break;
  }
  if (bodyText !== undefined && contentType !== undefined && contentType !== '') headers['content-type'] = contentType;
  if (method === 'GET' || method === 'HEAD') bodyText = undefined;
  return { req: { method, path, headers, body: bodyText, brokenChunk }, mutation: kind };
}

// ---- snapshot of the stored state
const VOLATILE = new Set([
  'deliveries',
  'last_seen',
  'fetched_time',
  'state',
  'state_reason',
  'state_updated_at',
  'last_evaluated_at',
  'scaling_in_progress',
]);
function scrub(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(scrub);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => !VOLATILE.has(k))
        .map(([k, v]) => [k, scrub(v)]),
    );
  }
  return value;
}
let eventCursor = '0';
async function snapshot(): Promise<{ state: string[]; events: string[] }> {
  const parts: unknown[] = [];
  for (const path of [
    '/servers',
    '/software_configs',
    '/software_deployments',
    '/stacks',
    '/stacks/fz/wait_conditions',
    '/stacks/fz/scaling_groups',
    '/stacks/fz/scaling_policies',
    '/alarms',
    '/metrics?limit=1000',
  ]) {
    const reply = await call('GET', `${P}${path}`, ADMIN);
    parts.push(reply.status === 200 ? scrub(JSON.parse(reply.body)) : reply.status);
  }
  // Events only grow: the new ones since the last snapshot (a refused request writes none).
  const listed = await call('GET', `${P}/events?limit=1000&after=${eventCursor}`, ADMIN);
  const page = JSON.parse(listed.body) as { events: Array<{ type: string; resource_id?: string }>; next_cursor: string };
  eventCursor = page.next_cursor;
  // The background's own events: an alarm evaluated, a fetch recorded after its reply was sent.
  const events = page.events.filter((e) => !e.type.startsWith('alarm.') && e.type !== 'deployment.fetched');
  return { state: parts.map((p) => JSON.stringify(p)), events: events.map((e) => `${e.type} ${e.resource_id ?? ''}`) };
}

// ---- the run
/** Where two snapshots of one list first differ, with some context. */
function describeChange(before: string, after: string): string {
  let i = 0;
  while (i < before.length && before[i] === after[i]) i++;
  return `…${before.slice(Math.max(0, i - 120), i + 120)}… became …${after.slice(Math.max(0, i - 120), i + 120)}…`;
}
interface Finding {
  n: number;
  problem: string;
  mutation: string;
  req: { method: string; path: string; headers: Record<string, string>; body?: string; brokenChunk?: boolean };
  status: number;
  body: string;
}
const findings: Finding[] = [];
const seen = new Set<string>();
function report(n: number, problem: string, mutation: string, req: Req, reply: Reply): void {
  const key = `${problem}|${req.method}|${req.path.replace(/[0-9a-f-]{36}/g, 'ID').slice(0, 80)}|${reply.status}`;
  if (seen.has(key)) return;
  seen.add(key);
  const body = req.body === undefined ? undefined : String(req.body).slice(0, 400);
  const finding = {
    n,
    problem,
    mutation,
    req: { ...req, path: req.path.slice(0, 300), body },
    status: reply.status,
    body: reply.body.slice(0, 400),
  };
  findings.push(finding);
  console.log(JSON.stringify(finding));
}

let baseline = await snapshot();
const started = Date.now();
const statusCounts = new Map<number, number>();
try {
  for (let n = 0; n < REQUESTS && !exited; n++) {
    const route = pick(routes);
    const { req, mutation } = buildRequest(route);
    let reply: Reply;
    try {
      reply = await send(req);
    } catch (error) {
      reply = { status: -1, headers: {}, body: String(error) };
      if (!exited) report(n, 'no reply', mutation, req, reply);
      agent.destroy();
      continue;
    }
    statusCounts.set(reply.status, (statusCounts.get(reply.status) ?? 0) + 1);
    if (reply.status >= 500) report(n, '5xx', mutation, req, reply);
    else if (reply.status >= 400 && req.method !== 'HEAD') {
      let code: unknown;
      try {
        code = (JSON.parse(reply.body) as { error?: { code?: unknown } }).error?.code;
      } catch {
        code = undefined;
      }
      // The CFN family (a path mutated into /v1/signal/…, /v1/?…) answers CFN's XML, the code in its message.
      const xmlCoded = /^<ErrorResponse>.*\(ERR_[A-Z_]+\)<\/Message>/s.test(reply.body);
      if ((typeof code !== 'string' || !code.startsWith('ERR_')) && !xmlCoded) report(n, 'uncoded 4xx', mutation, req, reply);
    }
    const wrote = reply.status >= 200 && reply.status < 300 && req.method !== 'GET' && req.method !== 'HEAD';
    if (wrote && process.env.FUZZ_LOG_WRITES) console.error(`write ${n}: ${req.method} ${req.path.slice(0, 200)} ${reply.status}`);
    // An agent's metadata GET records the fetch (fetched_time, scrubbed) and last_seen; it changes no listed state.
    const now = await snapshot();
    const changed = now.state.findIndex((part, i) => part !== baseline.state[i]);
    if (!wrote && changed >= 0)
      report(
        n,
        `state changed by a request that was not a 2xx write: ${describeChange(baseline.state[changed]!, now.state[changed]!)}`,
        mutation,
        req,
        reply,
      );
    if (!wrote && now.events.length > 0)
      report(n, `events written by a request that was not a 2xx write: ${now.events.join(', ')}`, mutation, req, reply);
    baseline = now;
    if (n % 1000 === 999) console.error(`${n + 1} requests, ${findings.length} findings, ${Math.round((Date.now() - started) / 1000)} s`);
  }
} finally {
  if (exited) console.log(JSON.stringify({ problem: 'server exited', stderr: stderr.slice(-4000) }));
  console.error(`statuses: ${JSON.stringify(Object.fromEntries([...statusCounts].sort((a, b) => a[0] - b[0])))}`);
  console.error(`${findings.length} findings; server stderr (errors):\n${stderr.slice(-4000)}`);
  child.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 500));
  agent.destroy();
  rmSync(dataDir, { recursive: true, force: true });
}
process.exitCode = findings.length > 0 ? 1 : 0;
