// The benchmark's fixtures, made through hearth's operator API exactly as an operator would: the
// metadata document agents poll, and pools of IN_PROGRESS deployments whose first signals are the
// signal benchmark's requests. Every store config gets the same fixtures.
import { writeFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';

/** The operator token every benchmark server is started with. */
export const ADMIN_TOKEN = 'bench-admin-token-0123456789';
/** The master key every benchmark server is started with. */
export const SECRET_KEY = 'bench-secret-key-0123456789abcdef';
/** Agent servers the signal deployments are spread over. */
export const SIGNAL_SERVERS = 8;

/** ~1 KB signal body, as a hook's result would be. */
export const SIGNAL_BODY = JSON.stringify({
  deploy_stdout: `${'configured step ok\n'.repeat(45)}done\n`,
  deploy_stderr: '',
  deploy_status_code: 0,
  result: 'ok',
});

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** One HTTP reply of the setup client. */
export interface HttpReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** A request for setup and checks (the measurements are wrk's), 30 s at most. */
export function http(method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<HttpReply> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method,
        agent,
        headers: {
          ...headers,
          ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
        },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: timed out`)));
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

/** Closes the setup client's idle sockets. */
export function closeSetupClient(): void {
  agent.destroy();
}

/** An operator API call that must answer `expect`; the parsed body. */
export async function operator<T>(base: string, method: string, path: string, body: unknown, expect: number): Promise<T> {
  const reply = await http(method, `${base}${path}`, { 'x-auth-token': ADMIN_TOKEN }, body);
  if (reply.status !== expect) throw new Error(`${method} ${path}: expected ${expect}, got ${reply.status}: ${reply.text.slice(0, 300)}`);
  return JSON.parse(reply.text) as T;
}

interface CreatedServer {
  server: { id: string };
  credential: { token: string };
}

/** Registers `count` agent servers (`bench-signal-<i>`) through `url`, in order. */
async function createAgentServers(url: string, count: number): Promise<CreatedServer[]> {
  const servers: CreatedServer[] = [];
  for (let i = 0; i < count; i++)
    servers.push(await operator<CreatedServer>(url, 'POST', '/v1/default/servers', { name: `bench-signal-${i}` }, 201));
  return servers;
}

/** Registers `count` agent servers through `url` and returns their tokens (`<access key id>:<secret>`), in order. */
export async function agentTokens(url: string, count: number): Promise<string[]> {
  return (await createAgentServers(url, count)).map((created) => created.credential.token);
}

/** The metadata fixture: one agent's credential, its document, and the ETag each replica sends. */
export interface MetaFixture {
  auth: string;
  document: string;
  /** The ETag of the document as each replica (in the order given) sends it. */
  etags: string[];
}

/**
 * One server with two script deployments (a ~3.2 KB document), created through `urls[0]`; then
 * each replica must answer 200 with an ETag and 304 to that ETag.
 */
export async function createMetaFixture(urls: string[]): Promise<MetaFixture> {
  const api = (method: string, path: string, body: unknown, expect: number) => operator(urls[0]!, method, path, body, expect);
  const created = (await api('POST', '/v1/default/servers', { name: 'bench-meta' }, 201)) as CreatedServer;
  const script = '#!/bin/sh\nset -eu\necho "configuring $(hostname)"\n' + 'echo "step"\n'.repeat(20);
  for (const name of ['bench-meta-a', 'bench-meta-b']) {
    const { software_config: config } = (await api(
      'POST',
      '/v1/default/software_configs',
      { name, group: 'script', config: script, outputs: [{ name: 'result' }] },
      200,
    )) as { software_config: { id: string } };
    await api('POST', '/v1/default/software_deployments', { config_id: config.id, server_id: created.server.id }, 200);
  }
  const auth = `Bearer ${created.credential.token}`;
  let document = '';
  const etags: string[] = [];
  for (const url of urls) {
    const first = await http('GET', `${url}/v1/guest/metadata`, { authorization: auth });
    const etag = String(first.headers.etag ?? '');
    if (first.status !== 200 || !etag) throw new Error(`GET ${url}/v1/guest/metadata: ${first.status} ${first.text.slice(0, 200)}`);
    const check = await http('GET', `${url}/v1/guest/metadata`, { authorization: auth, 'if-none-match': etag });
    if (check.status !== 304) throw new Error(`conditional GET ${url}/v1/guest/metadata answered ${check.status}, not 304`);
    document ||= first.text;
    etags.push(etag);
  }
  return { auth, document, etags };
}

/**
 * A store's pool of IN_PROGRESS deployments, each good for one first signal. `SIGNAL_SERVERS`
 * agent servers and one `script` config; deployments are created through the operator API.
 */
export class SignalPool {
  /** [deployment id, 1-based index of its agent's token] not yet signalled. */
  entries: Array<[string, number]> = [];
  created = 0;
  createSeconds = 0;
  /** The best signals/s seen, to size the next top-up. */
  maxRate = 0;
  /** 200 replies counted by wrk (warm-up included). */
  acks = 0;

  private constructor(
    private readonly url: string,
    private readonly servers: CreatedServer[],
    private readonly configId: string,
  ) {}

  /** The agent servers and the config, through `url`. */
  static async create(url: string): Promise<SignalPool> {
    const servers = await createAgentServers(url, SIGNAL_SERVERS);
    const { software_config: config } = await operator<{ software_config: { id: string } }>(
      url,
      'POST',
      '/v1/default/software_configs',
      { name: 'bench-signal', group: 'script', config: 'echo ok', outputs: [{ name: 'result' }] },
      200,
    );
    return new SignalPool(url, servers, config.id);
  }

  /** Creates `count` deployments, 64 requests in flight, spread round-robin over the agent servers. */
  async createDeployments(count: number): Promise<void> {
    const start = Date.now();
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const s = (this.created + next++) % SIGNAL_SERVERS;
        const { software_deployment: d } = await operator<{ software_deployment: { id: string; status: string } }>(
          this.url,
          'POST',
          '/v1/default/software_deployments',
          { config_id: this.configId, server_id: this.servers[s]!.server.id },
          200,
        );
        if (d.status !== 'IN_PROGRESS') throw new Error(`new deployment is ${d.status}`);
        this.entries.push([d.id, s + 1]);
      }
    };
    await Promise.all(Array.from({ length: 64 }, worker));
    this.created += count;
    this.createSeconds += (Date.now() - start) / 1000;
  }

  /** Tops the pool up so that each of `parts` wrk processes has `perPart` deployments; returns how many it created. */
  async ensure(parts: number, perPart: number): Promise<number> {
    const add = parts * perPart - this.entries.length;
    if (add <= 0) return 0;
    await this.createDeployments(add);
    return add;
  }

  /**
   * Writes the ids files `files` for signal.lua: the first line holds the agent tokens, then one
   * "<deployment id> <token #>" per line; entries are dealt out in turn, so the files are disjoint.
   * `tokens` (one per agent server, in order) replace this pool's own: the same requests for
   * another app's agents.
   */
  writeIds(files: string[], tokens = this.servers.map((s) => s.credential.token)): void {
    if (tokens.length !== this.servers.length)
      throw new Error(`writeIds: ${tokens.length} tokens for ${this.servers.length} agent servers`);
    files.forEach((file, part) => {
      const mine = this.entries.filter((_, i) => i % files.length === part);
      writeFileSync(file, `${tokens.join(' ')}\n${mine.map(([id, t]) => `${id} ${t}`).join('\n')}\n`);
    });
  }

  /** Drops what a run signalled: the first `used[part]` entries of each file `writeIds` wrote. */
  consume(used: number[]): void {
    const parts = used.length;
    const seen = new Array<number>(parts).fill(0);
    this.entries = this.entries.filter((_, i) => {
      const part = i % parts;
      return seen[part]!++ >= used[part]!;
    });
  }
}
