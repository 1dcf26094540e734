// Diagnostic (not run by `npm test` or `npm run bench`): a seeded random fuzzer of hearth-server's
// Heat/CFN-compatible surfaces. It spawns a real hearth-server on 127.0.0.1 (fresh data dir),
// creates fixtures through the operator API (servers of every transport, deployments with
// CFN_SIGNAL, HEAT_SIGNAL and TEMP_URL_SIGNAL, a stack with a wait condition, a scaling policy),
// takes their real URLs and credentials, then sends mutated requests over raw TCP (so any method,
// path byte or header goes out as written). Every answer must be < 500 in the shape its clients
// expect, the server must stay up, and stored state may change only in a batch where a request got
// a 2xx. Findings are printed as JSON lines; the exit code is 1 when there are any.
// Usage: node --import tsx test/bench/tools/fuzz-compat.ts [requests=20000] [seed=1]
import { createHash, createHmac } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import { connect } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signTempUrl, signV2 } from '../../../packages/protocol/src/signing.ts';
import { freePort, removeServerData, spawnServer, type ServerProcess } from '../../helpers/server.ts';

const REQUESTS = Number(process.argv[2] ?? 20_000);
const SEED = Number(process.argv[3] ?? 1);
const BATCH = 200;
const REQUEST_TIMEOUT_MS = 15_000;

/** mulberry32: small, seeded, good enough to pick mutations. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = rng(SEED);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const chance = (p: number) => random() < p;

interface RawRequest {
  method: string;
  /** The request target exactly as sent (may hold any byte). */
  target: string;
  headers: Array<[string, string]>;
  body: Buffer;
}
interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

let port = 0;
let host = '';

/** Sends one request over a fresh TCP connection; resolves with the parsed answer (status 0 if the connection failed). */
function send(request: RawRequest): Promise<RawResponse> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => socket.destroy(new Error('timeout')), REQUEST_TIMEOUT_MS);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(parseResponse(Buffer.concat(chunks)));
    });
    const hasLength = request.headers.some(([name]) => /^(content-length|transfer-encoding)$/i.test(name));
    const headers = [...request.headers, ['connection', 'close'] as [string, string]];
    if (!hasLength && (request.body.length > 0 || !['GET', 'HEAD'].includes(request.method)))
      headers.push(['content-length', String(request.body.length)]);
    const head = `${request.method} ${request.target} HTTP/1.1\r\n${headers.map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
    socket.write(Buffer.concat([Buffer.from(head, 'latin1'), request.body]));
  });
}

function parseResponse(raw: Buffer): RawResponse {
  const end = raw.indexOf('\r\n\r\n');
  if (end === -1) return { status: 0, headers: {}, body: raw.toString('latin1') };
  const [statusLine = '', ...lines] = raw.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = raw.subarray(end + 4);
  if (headers['transfer-encoding'] === 'chunked') {
    const parts: Buffer[] = [];
    let at = 0;
    while (at < body.length) {
      const lineEnd = body.indexOf('\r\n', at);
      const size = parseInt(body.subarray(at, lineEnd).toString(), 16);
      if (!(size > 0)) break;
      parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
    body = Buffer.concat(parts);
  }
  return { status: Number(statusLine.split(' ')[1] ?? 0), headers, body: body.toString('utf8') };
}

// ---------- fixtures, through the operator API ----------

let server: ServerProcess;
const admin = () => ({ 'x-auth-token': server.token, 'content-type': 'application/json' });

async function api<T>(method: string, path: string, body?: unknown, expect = [200, 201]): Promise<T> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: admin(),
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!expect.includes(response.status)) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return (text ? JSON.parse(text) : {}) as T;
}

interface Credential {
  key: string;
  secret: string;
}
interface Fixtures {
  cfnServer: Credential & { stackName: string; resource: string };
  heatServer: Credential & { metadataPath: string };
  tempMetadataUrl: URL;
  cfnSignalUrl: URL;
  heatSignal: { user: string; password: string; project: string; stackId: string; resource: string };
  tempSignalUrl: URL;
  handle: { cfnUrl: URL; signalUrl: URL; endpoint: URL; token: string };
  policy: { alarmUrl: URL; signalUrl: URL; token: string };
  deployments: string[];
}

async function fixtures(actuatorUrl: string): Promise<Fixtures> {
  type Created = {
    server: { id: string };
    credential: { access_key_id: string; secret_access_key: string };
    os_collect_config: Record<string, Record<string, string>>;
  };
  await api('POST', '/v1/default/stacks', { stack_name: 'web' });
  const cfn = await api<Created>('POST', '/v1/default/servers', {
    name: 'vm1',
    software_config_transport: 'POLL_SERVER_CFN',
    stack: 'web',
  });
  const heat = await api<Created>('POST', '/v1/default/servers', { name: 'vm2', software_config_transport: 'POLL_SERVER_HEAT' });
  const temp = await api<Created>('POST', '/v1/default/servers', { name: 'vm3', software_config_transport: 'POLL_TEMP_URL' });
  const host = await api<Created>('POST', '/v1/default/servers', { name: 'vm4' });
  const config = await api<{ software_config: { id: string } }>('POST', '/v1/default/software_configs', {
    name: 'c',
    group: 'script',
    config: 'true',
    outputs: [{ name: 'result' }],
  });
  const deployments: string[] = [];
  for (const transport of ['CFN_SIGNAL', 'HEAT_SIGNAL', 'TEMP_URL_SIGNAL']) {
    const created = await api<{ software_deployment: { id: string } }>('POST', '/v1/default/software_deployments', {
      config_id: config.software_config.id,
      server_id: host.server.id,
      signal_transport: transport,
    });
    deployments.push(created.software_deployment.id);
  }
  const auth = `Bearer ${host.credential.access_key_id}:${host.credential.secret_access_key}`;
  const metadata = (await (await fetch(`${server.url}/v1/guest/metadata`, { headers: { authorization: auth } })).json()) as {
    deployments: Array<{ id: string; inputs: Array<{ name: string; value: string }> }>;
  };
  const input = (id: string, name: string): string => {
    // Entries are keyed by derived config; a deployment outside a stack is placed at `deployments/{id}`.
    const entry = metadata.deployments.find((d) => d.inputs.some((i) => i.name === 'deploy_stack_id' && i.value.includes(id)));
    return entry!.inputs.find((i) => i.name === name)!.value;
  };
  const wc = await api<{ wait_condition: { handle: { cfn_url: string; signal_url: string; endpoint: string; token: string } } }>(
    'POST',
    '/v1/default/stacks/web/wait_conditions',
    { name: 'ready', count: 1000, timeout: 43200 },
  );
  await api('POST', '/v1/default/stacks/web/scaling_groups', {
    name: 'workers',
    min_size: 1,
    max_size: 3,
    cooldown: 0,
    actuator: { url: actuatorUrl, secret: 'actuator-secret-0123' },
  });
  const policy = await api<{ scaling_policy: { alarm_url: string; signal_url: string; signal_token: string } }>(
    'POST',
    '/v1/default/stacks/web/scaling_policies',
    { name: 'up', group: 'workers', adjustment_type: 'change_in_capacity', scaling_adjustment: 1 },
  );
  const [cfnD, heatD, tempD] = deployments as [string, string, string];
  const heatCfg = heat.os_collect_config.heat!;
  return {
    cfnServer: {
      key: cfn.credential.access_key_id,
      secret: cfn.credential.secret_access_key,
      stackName: cfn.os_collect_config.cfn!.stack_name!,
      resource: 'vm1',
    },
    heatServer: {
      key: heat.credential.access_key_id,
      secret: heat.credential.secret_access_key,
      metadataPath: `/v1/default/stacks/${heatCfg.stack_id}/resources/${heatCfg.resource_name}/metadata`,
    },
    tempMetadataUrl: new URL(temp.os_collect_config.request!.metadata_url!),
    cfnSignalUrl: new URL(input(cfnD, 'deploy_signal_id')),
    heatSignal: {
      user: input(heatD, 'deploy_user_id'),
      password: input(heatD, 'deploy_password'),
      project: input(heatD, 'deploy_project_id'),
      stackId: input(heatD, 'deploy_stack_id'),
      resource: input(heatD, 'deploy_resource_name'),
    },
    tempSignalUrl: new URL(input(tempD, 'deploy_signal_id')),
    handle: {
      cfnUrl: new URL(wc.wait_condition.handle.cfn_url),
      signalUrl: new URL(wc.wait_condition.handle.signal_url),
      endpoint: new URL(wc.wait_condition.handle.endpoint),
      token: wc.wait_condition.handle.token,
    },
    policy: {
      alarmUrl: new URL(policy.scaling_policy.alarm_url),
      signalUrl: new URL(policy.scaling_policy.signal_url),
      token: policy.scaling_policy.signal_token,
    },
    deployments,
  };
}

/** A keystone token for a credential (the way keystoneauth logs in). */
async function keystoneToken(user: string, password: string): Promise<string> {
  const response = await fetch(`${server.url}/v3/auth/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ auth: { identity: { methods: ['password'], password: { user: { id: user, password } } } } }),
  });
  if (response.status !== 201) throw new Error(`keystone login failed: ${response.status} ${await response.text()}`);
  return response.headers.get('x-subject-token')!;
}

// ---------- mutations ----------

const WEIRD = [
  '',
  ' ',
  '%',
  '%zz',
  '%00',
  '%C0%80',
  '%ED%A0%80',
  '%FF',
  '\u00e9',
  '\u{1F600}',
  '\uD800',
  '..',
  '/',
  '//',
  '\\',
  ';',
  '?',
  '#',
  '&',
  '=',
  '+',
  'null',
  '[]',
  '{}',
  '__proto__',
  'constructor',
  'x'.repeat(300),
  'x'.repeat(9000),
  '-1',
  '1e999',
  '0x10',
  '9'.repeat(40),
];
const weird = () => pick(WEIRD);

/** Percent-encodes a path segment's characters in a random way (some upper, some lower, some twice, some raw). */
function mangleEncoding(text: string): string {
  return [...text]
    .map((char) => {
      const r = random();
      if (r < 0.7) return char;
      const hex = Buffer.from(char, 'utf8').toString('hex').match(/../g)!;
      const enc = hex.map((h) => `%${r < 0.8 ? h.toUpperCase() : h}`).join('');
      return r < 0.95 ? enc : enc.replaceAll('%', '%25');
    })
    .join('');
}

function manglePath(path: string): string {
  const segments = path.split('/');
  switch (Math.floor(random() * 10)) {
    case 0:
      return mangleEncoding(path);
    case 1:
      return path.replace(/\//g, () => (chance(0.2) ? '//' : '/'));
    case 2: {
      const i = Math.floor(random() * segments.length);
      segments[i] = weird();
      return segments.join('/');
    }
    case 3:
      return `${path}/${weird()}`;
    case 4:
      return path.slice(0, Math.floor(random() * path.length));
    case 5:
      return path.replace(/%3A/gi, () => pick([':', '%3a', '%3A', '%253A', '%3']));
    case 6:
      return `${path}${'/x'.repeat(Math.floor(random() * 4000))}`;
    case 7:
      return path.replace(/resources/, pick(['Resources', 'resource', 'resources/x', 'resources/', '..']));
    case 8:
      return path.replace('arn', pick(['ARN', 'arn%', 'urn', 'arn:aws']));
    default:
      return `${path}${pick(['/', '/.', '/..', '%2F', '%00'])}`;
  }
}

type Params = Array<[string, string]>;

function mangleParams(params: Params): Params {
  const out = params.map(([k, v]) => [k, v] as [string, string]);
  const times = 1 + Math.floor(random() * 3);
  for (let n = 0; n < times; n++) {
    const i = Math.floor(random() * Math.max(out.length, 1));
    const entry = out[i];
    switch (Math.floor(random() * 12)) {
      case 0:
        if (entry) out.splice(i, 1);
        break;
      case 1:
        if (entry) out.push([entry[0], chance(0.5) ? entry[1] : weird()]);
        break;
      case 2:
        if (entry) entry[1] = '';
        break;
      case 3:
        if (entry) entry[1] = weird();
        break;
      case 4:
        if (entry) out.push([`${entry[0]}[]`, entry[1]]);
        break;
      case 5:
        out.push([
          'Timestamp',
          pick([
            '',
            'x',
            '2024-13-45T99:99:99Z',
            '9999-12-31T23:59:59Z',
            '0000-01-01T00:00:00Z',
            '2024-01-01T00:00:00+99:99',
            '2024-02-30T00:00:00Z',
            '1',
          ]),
        ]);
        break;
      case 6:
        out.push(['SignatureVersion', pick(['0', '1', '2 ', '02', '3', '4', '', 'x', '2.0', '-2'])]);
        break;
      case 7:
        out.push(['SignatureMethod', pick(['HmacSHA1', 'HmacSHA512', '', 'x', 'hmacsha256'])]);
        break;
      case 8:
        out.push(['X-Amz-Date', pick(['', '20240101T000000Z', 'x', '99999999T999999Z', '20241301T000000Z'])]);
        out.push(['X-Amz-Algorithm', pick(['AWS4-HMAC-SHA256', 'x', ''])]);
        out.push(['X-Amz-Credential', pick(['a/b', 'AK/20240101/r/s/aws4_request', '', '////'])]);
        out.push(['X-Amz-Signature', pick(['', 'ab', 'x'.repeat(64)])]);
        out.push(['X-Amz-SignedHeaders', pick(['', 'host', 'host;x-amz-date;nope'])]);
        out.push(['X-Amz-Expires', pick(['', '-1', '999999999999', 'x', '60'])]);
        break;
      case 9:
        out.push([weird(), weird()]);
        break;
      case 10:
        if (entry) entry[0] = entry[0].toLowerCase();
        break;
      default:
        out.push(['ContentType', pick(['JSON', 'json', 'XML', '', 'x'])]);
    }
  }
  return out;
}

function encodeQuery(params: Params, raw = false): string {
  const enc = (s: string) => (raw ? s : encodeURIComponent(s.replace(/[\uD800-\uDFFF]/g, '\uFFFD')));
  return params.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&');
}

const BODIES: Array<() => [string | undefined, Buffer]> = [
  () => ['application/json', Buffer.from('{"Status":"SUCCESS","Reason":"r","UniqueId":"u1","Data":"d"}')],
  () => ['application/json', Buffer.from(JSON.stringify({ deploy_stdout: 'o', deploy_stderr: '', deploy_status_code: 0, result: 'x' }))],
  () => ['application/json', Buffer.from('[1,2,3]')],
  () => ['application/json', Buffer.from(pick(['null', '1', '"s"', 'true', '{}', '[]', '', '{', '{"a":', '\ufeff{}']))],
  () => ['application/json', Buffer.from(`${'['.repeat(20000)}${']'.repeat(20000)}`)],
  () => [
    'application/json',
    Buffer.from(
      JSON.stringify({
        Status: pick(['SUCCESS', 'FAILURE', 'x', 1, null, []]),
        UniqueId: pick(['a', 1, null, {}, 'x'.repeat(5000), '\u0000']),
        Data: pick([{}, [], 'x', null]),
      }),
    ),
  ],
  () => [
    'application/json',
    Buffer.from(
      JSON.stringify({
        deploy_status_code: pick(['0', -1, 1e300, null, [], {}, 1.5]),
        deploy_stdout: pick([1, {}, null, 'x'.repeat(70000)]),
      }),
    ),
  ],
  () => ['application/json', Buffer.from(JSON.stringify({ __proto__: { x: 1 }, constructor: 1, data: 'x' }))],
  () => ['application/json', Buffer.alloc(2_000_000, 'a')],
  () => ['application/json', Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])],
  () => ['application/xml', Buffer.from('<Status>SUCCESS</Status>')],
  () => ['application/x-www-form-urlencoded', Buffer.from('Status=SUCCESS&Status=FAILURE&UniqueId=a&UniqueId=b')],
  () => ['text/plain', Buffer.from('hello')],
  () => [
    pick([
      'application/json; charset=latin1',
      'application/JSON',
      'application/json;',
      'multipart/form-data; boundary=x',
      '*/*',
      'application/octet-stream',
      ' ',
      'a/b/c',
      'application/x-www-form-urlencoded; charset=utf-16',
    ]),
    Buffer.from('{"Status":"SUCCESS"}'),
  ],
  () => [undefined, Buffer.from('{"Status":"SUCCESS"}')],
  () => [undefined, Buffer.alloc(0)],
];

function body(): [string | undefined, Buffer] {
  return pick(BODIES)();
}

// ---------- request builders per surface ----------

type Surface = 'cfn' | 'json';
interface Built {
  request: RawRequest;
  surface: Surface;
  /** A short label for the report. */
  kind: string;
  /** Changed after signing and not signed again: a 2xx is worth a look (it may be a change the signature ignores). */
  tampered?: boolean;
}

let fx: Fixtures;
let tokens: { heatDeployment: string; heatServer: string };

function splitQuery(url: URL): Params {
  return [...url.searchParams.entries()];
}

/** Re-signs v2 params for a path (decoded), as a valid client would after changing them. */
function resignV2(method: string, path: string, params: Params, secret: string): Params {
  let decoded = path;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // keep it raw: the server refuses malformed encoding anyway
  }
  const record: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, v] of params) if (k !== 'Signature' && !(k in record)) record[k] = v;
  const signature = signV2(secret, record.SignatureMethod === 'HmacSHA1' ? 'sha1' : 'sha256', method, host, decoded, record);
  return [...params.filter(([k]) => k !== 'Signature'), ['Signature', signature]];
}

function headersFor(contentType: string | undefined, extra: Array<[string, string]> = []): Array<[string, string]> {
  const headers: Array<[string, string]> = [['host', chance(0.05) ? pick(['', '[::1]:1', 'x'.repeat(300), host.toUpperCase()]) : host]];
  if (contentType !== undefined) headers.push(['content-type', contentType]);
  return [...headers, ...extra];
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'PROPFIND', 'GETX'];

function signedUrlRequest(url: URL, verb: string, secret: string, kind: string): Built {
  let path = url.pathname;
  let params = splitQuery(url);
  const original = `${path}?${encodeQuery(params)}`;
  if (chance(0.4)) path = manglePath(path);
  if (chance(0.5)) params = mangleParams(params);
  const resigned = chance(0.5);
  if (resigned) params = resignV2(verb, path, params, secret);
  const method = chance(0.9) ? verb : pick(METHODS);
  const [contentType, payload] = body();
  const target = `${path}?${encodeQuery(params, chance(0.05))}`;
  return {
    request: { method, target, headers: headersFor(contentType), body: method === 'HEAD' ? Buffer.alloc(0) : payload },
    surface: 'cfn',
    kind,
    tampered: !resigned && target !== original,
  };
}

function describeRequest(): Built {
  const c = fx.cfnServer;
  let params: Params = [
    ['Action', chance(0.9) ? 'DescribeStackResource' : pick(['PutMetricData', 'x', '', 'ListStacks'])],
    ['StackName', chance(0.9) ? c.stackName : weird()],
    ['LogicalResourceId', chance(0.9) ? c.resource : weird()],
    ['AWSAccessKeyId', c.key],
    ['SignatureVersion', '2'],
    ['SignatureMethod', 'HmacSHA256'],
  ];
  if (chance(0.3)) params.push(['ContentType', 'JSON']);
  if (chance(0.5)) params = mangleParams(params);
  const method = chance(0.6) ? 'GET' : chance(0.9) ? 'POST' : pick(METHODS);
  const signMethod = chance(0.95) ? method : 'GET';
  if (chance(0.7)) params = resignV2(signMethod, '/v1/', params, c.secret);
  const path = chance(0.9) ? '/v1/' : pick(['/v1', '/v1//', '/V1/', '/v1/%2F', '/v1/?']);
  if (method === 'POST' && chance(0.6)) {
    const form = encodeQuery(params, chance(0.05));
    const split = chance(0.3) ? Math.floor(random() * params.length) : params.length;
    const query = encodeQuery(params.slice(split));
    const extra: Array<[string, string]> = [];
    if (chance(0.3)) {
      const amzDate = chance(0.8)
        ? new Date()
            .toISOString()
            .replace(/[-:]/g, '')
            .replace(/\.\d{3}Z$/, 'Z')
        : weird();
      const day = amzDate.slice(0, 8);
      const scope = `${day}/RegionOne/cloudformation/aws4_request`;
      const sha = (t: string) => createHash('sha256').update(t).digest('hex');
      const canonical = ['POST', '/v1/', '', `host:${host}\nx-amz-date:${amzDate}\n`, 'host;x-amz-date', sha(form)].join('\n');
      const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha(canonical)].join('\n');
      const key = [day, 'RegionOne', 'cloudformation', 'aws4_request'].reduce<Buffer>(
        (k, part) => createHmac('sha256', k).update(part).digest(),
        Buffer.from(`AWS4${c.secret}`),
      );
      const signature = createHmac('sha256', key).update(toSign).digest('hex');
      extra.push(['x-amz-date', amzDate]);
      extra.push([
        'authorization',
        chance(0.8)
          ? `AWS4-HMAC-SHA256 Credential=${c.key}/${scope},SignedHeaders=${pick(['host;x-amz-date', 'host', 'x-nope', '', 'host;constructor', '__proto__;host'])},Signature=${signature}`
          : `AWS4-HMAC-SHA256 ${weird()}`,
      ]);
      if (chance(0.2)) extra.push(['x-amz-content-sha256', pick(['UNSIGNED-PAYLOAD', 'x', sha(form)])]);
    }
    const contentType = chance(0.85)
      ? 'application/x-www-form-urlencoded'
      : pick(['application/json', 'text/plain', undefined, 'application/x-www-form-urlencoded; charset=latin1']);
    const formBody = chance(0.05) ? Buffer.alloc(100_000, 'a') : Buffer.from(form);
    return {
      request: {
        method,
        target: `${path}${split < params.length ? `?${query}` : ''}`,
        headers: headersFor(contentType, extra),
        body: formBody,
      },
      surface: 'cfn',
      kind: 'describe-form',
    };
  }
  const [contentType, payload] = chance(0.7) ? [undefined, Buffer.alloc(0)] : body();
  return {
    request: {
      method,
      target: `${path}?${encodeQuery(params, chance(0.05))}`,
      headers: headersFor(contentType),
      body: method === 'HEAD' ? Buffer.alloc(0) : payload,
    },
    surface: 'cfn',
    kind: 'describe',
  };
}

function keystoneBody(): unknown {
  const good = {
    auth: { identity: { methods: ['password'], password: { user: { id: fx.heatSignal.user, password: fx.heatSignal.password } } } },
  };
  const variants: Array<() => unknown> = [
    () => good,
    () => ({ auth: { identity: { methods: 'password', password: good.auth.identity.password } } }),
    () => ({ auth: { identity: { methods: ['password'], password: { user: { id: fx.heatSignal.user, password: { x: 1 } } } } } }),
    () => ({
      auth: { identity: { methods: ['password'], password: { user: { id: 'x'.repeat(pick([33, 256, 100000])), password: 'p' } } } },
    }),
    () => ({
      auth: {
        identity: {
          methods: ['password'],
          password: { user: { name: fx.heatSignal.user, password: fx.heatSignal.password, domain: pick([{ id: 'default' }, 'x', null]) } },
        },
      },
    }),
    () => ({ auth: { identity: { methods: ['token'], token: { id: tokens.heatDeployment } } } }),
    () => ({
      auth: {
        ...good.auth,
        scope: pick([
          { project: { id: fx.heatSignal.project } },
          { project: { id: 'other' } },
          { project: 'x' },
          { domain: { id: 'd' } },
          null,
        ]),
      },
    }),
    () => ({
      auth: {
        identity: {
          methods: ['password', 'password'],
          password: { user: { id: fx.heatSignal.user.toUpperCase(), password: fx.heatSignal.password } },
        },
      },
    }),
    () => ({ auth: { identity: { methods: [], password: {} } } }),
    () => pick([[], null, 1, 'auth', { auth: null }, { auth: [] }, {}]),
    () => ({ auth: { identity: { methods: ['password'], password: { user: { id: weird(), password: weird() } } } } }),
  ];
  return pick(variants)();
}

function keystoneRequest(): Built {
  if (chance(0.15)) {
    const method = pick(['GET', 'HEAD', 'OPTIONS', 'DELETE', 'POST']);
    return {
      request: {
        method,
        target: pick(['/v3', '/v3/', '/v3?x=1', '/v3//', '/v3/auth', '/v3/auth/tokens/x']),
        headers: headersFor(undefined),
        body: Buffer.alloc(0),
      },
      surface: 'json',
      kind: 'keystone-misc',
    };
  }
  const [contentType, raw] = chance(0.8) ? ['application/json', Buffer.from(JSON.stringify(keystoneBody()) ?? '')] : body();
  const method = chance(0.9) ? 'POST' : pick(METHODS);
  const extra: Array<[string, string]> = chance(0.2) ? [['x-auth-token', pick([tokens.heatDeployment, 'hk1.', 'hk1.x.y', weird()])]] : [];
  return {
    request: {
      method,
      target: chance(0.9) ? '/v3/auth/tokens' : manglePath('/v3/auth/tokens'),
      headers: headersFor(contentType, extra),
      body: raw,
    },
    surface: 'json',
    kind: 'keystone',
  };
}

function mangleToken(token: string): string {
  switch (Math.floor(random() * 8)) {
    case 0:
      return token.slice(0, -1);
    case 1:
      return `${token}x`;
    case 2:
      return token.replace('hk1.', 'hk2.');
    case 3: {
      const [prefix, , sig] = token.split('.');
      const forged = Buffer.from(pick(['{}', '[]', 'null', '{"a":1,"p":2,"e":"x"}', '{"a":"x","p":"default","e":1e300}']), 'utf8').toString(
        'base64url',
      );
      return `${prefix}.${forged}.${sig}`;
    }
    case 4:
      return `hk1.${weird()}.${weird()}`;
    case 5:
      return pick([tokens.heatServer, fx.handle.token, fx.policy.token, 'test-admin-token:', ':x', 'a:b']);
    case 6:
      return weird();
    default:
      return token;
  }
}

function heatRequest(): Built {
  const h = fx.heatSignal;
  const choice = Math.floor(random() * 4);
  let path: string;
  let token: string;
  let verb: string;
  if (choice === 0) {
    path = `/v1/${h.project}/stacks/${h.stackId}/resources/${h.resource}/signal`;
    token = tokens.heatDeployment;
    verb = 'POST';
  } else if (choice === 1) {
    path = fx.heatServer.metadataPath;
    token = tokens.heatServer;
    verb = 'GET';
  } else if (choice === 2) {
    path = fx.handle.endpoint.pathname;
    token = fx.handle.token;
    verb = 'POST';
  } else {
    path = fx.policy.signalUrl.pathname;
    token = fx.policy.token;
    verb = 'POST';
  }
  if (chance(0.4)) path = manglePath(path);
  if (chance(0.5)) token = mangleToken(token);
  const method = chance(0.9) ? verb : pick(METHODS);
  const [contentType, payload] = body();
  const headers = headersFor(contentType, chance(0.95) ? [['x-auth-token', token]] : [['authorization', `Bearer ${token}`]]);
  if (chance(0.05)) headers.push(['x-auth-token', weird()]);
  const query = chance(0.1) ? `?${encodeQuery(mangleParams([['a', 'b']]))}` : '';
  return {
    request: { method, target: `${path}${query}`, headers, body: method === 'GET' || method === 'HEAD' ? Buffer.alloc(0) : payload },
    surface: 'json',
    kind: `heat-${choice}`,
  };
}

function swiftRequest(): Built {
  const metadata = chance(0.5);
  const url = metadata ? fx.tempMetadataUrl : fx.tempSignalUrl;
  const verb = metadata ? (chance(0.7) ? 'GET' : 'HEAD') : 'PUT';
  let path = url.pathname;
  let params = splitQuery(url);
  if (chance(0.3)) path = manglePath(path);
  if (chance(0.5)) {
    params = params.map(([k, v]) => {
      if (!chance(0.5)) return [k, v];
      if (k === 'temp_url_sig')
        return [
          k,
          pick([
            v.toUpperCase(),
            v.slice(1),
            `sha1:${Buffer.from(v, 'hex').toString('base64')}`,
            `sha256:${weird()}`,
            'sha512:',
            weird(),
            `${v}${v}`,
          ]),
        ];
      return [
        k,
        pick([String(Number(v) + 1), '0', '2030-01-01T00:00:00Z', '2030-02-30T00:00:00Z', '999999999999', weird(), `${v}.0`, `-${v}`]),
      ];
    });
    if (chance(0.3)) params = mangleParams(params);
  }
  const method = chance(0.9) ? verb : pick(METHODS);
  if (chance(0.3)) {
    // A valid signature for the mutated path and expiry, so the handler behind it is fuzzed too.
    const object = url.pathname.split('/')[6] ?? '';
    const expires = Number(params.find(([k]) => k === 'temp_url_expires')?.[1]);
    if (Number.isSafeInteger(expires)) {
      const sig = signTempUrl({ method: method === 'HEAD' ? 'GET' : (method as 'GET' | 'PUT'), path, expires, key: tempUrlKey(object) });
      params = params.map(([k, v]) => [k, k === 'temp_url_sig' ? sig : v]);
    }
  }
  const [contentType, payload] = body();
  return {
    request: {
      method,
      target: `${path}?${encodeQuery(params, chance(0.05))}`,
      headers: headersFor(contentType),
      body: method === 'GET' || method === 'HEAD' ? Buffer.alloc(0) : payload,
    },
    surface: 'json',
    kind: metadata ? 'swift-get' : 'swift-put',
  };
}

function build(): Built {
  const r = random();
  if (r < 0.15) return signedUrlRequest(fx.cfnSignalUrl, 'POST', cfnSecret(), 'cfn-signal');
  if (r < 0.3) return signedUrlRequest(fx.handle.cfnUrl, 'PUT', handleSecret, 'waitcondition');
  if (r < 0.38) return signedUrlRequest(fx.handle.signalUrl, 'POST', handleSecret, 'handle-signal');
  if (r < 0.45) return signedUrlRequest(fx.policy.alarmUrl, 'POST', policySecret, 'alarm');
  if (r < 0.6) return describeRequest();
  if (r < 0.72) return keystoneRequest();
  if (r < 0.88) return heatRequest();
  return swiftRequest();
}

// Secrets of the signed URLs are not handed out by the API; valid re-signing needs them, so the
// fuzzer derives them the way the server does (HMAC of the access key under the test master key).
let handleSecret = '';
let policySecret = '';
let cfnSignalSecret = '';
let tempUrlKey: (object: string) => string = () => '';
const cfnSecret = () => cfnSignalSecret;

// ---------- checks ----------

interface Finding {
  kind: string;
  problem: string;
  method: string;
  target: string;
  headers: Array<[string, string]>;
  body: string;
  status: number;
  answer: string;
}
const findings: Finding[] = [];
const seen = new Set<string>();
/** Answers per request kind and status, printed at the end to show how deep the requests got. */
const stats = new Map<string, number>();

function report(built: Built, response: RawResponse, problem: string): void {
  const reason = /"reason":"([^"]{0,60})/.exec(response.body)?.[1] ?? /<Message>([^<]{0,60})/.exec(response.body)?.[1] ?? '';
  const key = `${built.kind}|${problem}|${response.status}|${reason}`;
  if (seen.has(key)) return;
  seen.add(key);
  const finding: Finding = {
    kind: built.kind,
    problem,
    method: built.request.method,
    target: built.request.target.slice(0, 600),
    headers: built.request.headers.map(([k, v]) => [k, v.slice(0, 200)]),
    body: built.request.body.subarray(0, 300).toString('utf8'),
    status: response.status,
    answer: response.body.slice(0, 600),
  };
  findings.push(finding);
  console.log(JSON.stringify(finding));
}

function check(built: Built, response: RawResponse): void {
  if (response.status === 0) return report(built, response, 'no answer (connection cut or timeout)');
  if (response.status >= 500) return report(built, response, `status ${response.status}`);
  if (built.tampered && response.status < 300) return report(built, response, 'changed after signing, still accepted');
  if (response.status < 400 || built.request.method === 'HEAD') return;
  const text = response.body;
  const path = built.request.target.split('?', 1)[0] ?? '';
  const cfnRoute =
    (built.request.method === 'PUT' && path.startsWith('/v1/waitcondition/')) ||
    (built.request.method === 'POST' && path.startsWith('/v1/signal/')) ||
    (['GET', 'POST'].includes(built.request.method) && path === '/v1/');
  if (built.surface === 'cfn') {
    if (!cfnRoute) return;
    const json = /^\{"ErrorResponse":\{"Error":\{"Type":"Sender","Code":"[A-Za-z]+","Message":"[^"]*\(ERR_[A-Z_]+\)"/.test(text);
    const xml =
      /^<ErrorResponse><Error><Type>Sender<\/Type><Code>[A-Za-z]+<\/Code><Message>[^<]*\(ERR_[A-Z_]+\)<\/Message><\/Error><\/ErrorResponse>$/.test(
        text,
      );
    if (!json && !xml) report(built, response, 'CFN error not in ErrorResponse shape');
    return;
  }
  try {
    const parsed = JSON.parse(text) as { error?: { code?: unknown } };
    if (typeof parsed.error?.code !== 'string' || !parsed.error.code.startsWith('ERR_')) report(built, response, 'error without a code');
  } catch {
    report(built, response, 'error body is not JSON');
  }
}

async function snapshot(): Promise<string> {
  const deployments = await Promise.all(
    fx.deployments.map(async (id) => {
      const d = (
        await api<{ software_deployment: { status: string; output_values: unknown } }>('GET', `/v1/default/software_deployments/${id}`)
      ).software_deployment;
      return [d.status, d.output_values];
    }),
  );
  const wc = (await api<{ wait_condition: { received: number; status: string } }>('GET', '/v1/default/stacks/web/wait_conditions/ready'))
    .wait_condition;
  const policy = (await api<{ scaling_policy: { last_signal: unknown } }>('GET', '/v1/default/stacks/web/scaling_policies/up'))
    .scaling_policy;
  return JSON.stringify({ deployments, wc: [wc.received, wc.status], policy: policy.last_signal });
}

async function main(): Promise<void> {
  const actuator = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => actuator.listen(0, '127.0.0.1', resolve));
  const actuatorPort = (actuator.address() as { port: number }).port;
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-fuzz-'));
  port = await freePort();
  host = `127.0.0.1:${port}`;
  server = await spawnServer(dataDir, port);
  let crashed = false;
  let stopping = false;
  void server.exited.then((code) => {
    if (stopping) return;
    crashed = true;
    console.log(JSON.stringify({ problem: `hearth-server exited with ${code}` }));
  });
  try {
    fx = await fixtures(`http://127.0.0.1:${actuatorPort}/scale`);
    const { SecretDeriver } = await import('../../../packages/server/src/auth/secrets.ts');
    const { TEST_SECRET_KEY } = await import('../../helpers/server.ts');
    const deriver = new SecretDeriver(TEST_SECRET_KEY);
    const keyOf = (url: URL) => url.searchParams.get('AWSAccessKeyId') ?? '';
    handleSecret = deriver.agentSecret(keyOf(fx.handle.cfnUrl));
    policySecret = deriver.agentSecret(keyOf(fx.policy.alarmUrl));
    cfnSignalSecret = deriver.agentSecret(keyOf(fx.cfnSignalUrl));
    tempUrlKey = (object) => deriver.tempUrlKey(object);
    tokens = {
      heatDeployment: await keystoneToken(fx.heatSignal.user, fx.heatSignal.password),
      heatServer: await keystoneToken(fx.heatServer.key, fx.heatServer.secret),
    };
    // Stored state is read again after every request that could write (a signal route): it may
    // change only when that request got a 2xx, and between requests nothing else changes it.
    let before = await snapshot();
    for (let sent = 0; sent < REQUESTS && !crashed; sent += BATCH) {
      for (let i = 0; i < BATCH && sent + i < REQUESTS && !crashed; i++) {
        const built = build();
        const response = await send(built.request);
        check(built, response);
        const tally = `${built.kind} ${response.status}`;
        stats.set(tally, (stats.get(tally) ?? 0) + 1);
        if (crashed || ['describe', 'describe-form', 'keystone', 'keystone-misc', 'heat-1', 'swift-get'].includes(built.kind)) continue;
        const after = await snapshot();
        if (after !== before && (response.status < 200 || response.status >= 300))
          report(built, response, `state changed: ${before} -> ${after}`);
        before = after;
      }
      if (crashed) break;
      if ((sent / BATCH) % 10 === 0) console.error(`sent ${sent + BATCH}, findings ${findings.length}`);
    }
  } finally {
    stopping = true;
    server.child.kill('SIGTERM');
    await server.exited;
    actuator.close();
    await removeServerData(dataDir);
  }
  console.error(
    [...stats]
      .sort()
      .map(([k, n]) => `${k}: ${n}`)
      .join('\n'),
  );
  console.error(`done: ${findings.length} findings`);
  process.exitCode = findings.length > 0 || crashed ? 1 : 0;
}

await main();
