import { randomUUID } from 'node:crypto';
import {
  heatTime,
  type ConfigInputBody,
  type ConfigOutputBody,
  type SoftwareConfig,
  type SoftwareConfigCreate,
  type SoftwareConfigSummary,
  type StoredInput,
  type StoredOutput,
} from '@hearth/protocol';
import type { Transaction } from 'kysely';
import type { Store } from '../store/store.ts';
import type { ConfigRow, Database } from '../store/schema.ts';
import { HearthError } from './errors.ts';
import { ANY_TOPIC, CONFIG_TOPIC, topics } from '../feed/feed.ts';
import { heatBoolean, heatDefault } from './parameter-types.ts';
import { resourceEvent } from './events.ts';

/** Group of a config created without one (Heat's default). */
export const UNGROUPED = 'Heat::Ungrouped';

/** A boolean item key read as Heat reads it (a boolean or `true`/`false` in any case), or a coded 400. */
function itemBoolean(item: string, key: string, value: boolean | string): boolean {
  const converted = heatBoolean(value);
  if ('error' in converted) throw new HearthError('ERR_CONFIG_INVALID', { reason: `${item}: ${key}: ${converted.error}` });
  return converted.value as boolean;
}

/** A text key given as a whole number or a boolean, as the text Heat stores (`5` → `"5"`, `true` → `"True"`). */
function heatText(value: string | number | boolean): string {
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  return String(value);
}

/**
 * Normalises an input as Heat stores it: null-valued keys dropped, type defaulted, a default of a
 * given type converted to that type (a default without a type is kept as sent, as Heat keeps it).
 */
export function normalizeInput(input: ConfigInputBody): StoredInput {
  const type = input.type ?? 'String';
  const stored: StoredInput = { name: input.name, type };
  if (input.description !== undefined && input.description !== null) stored.description = heatText(input.description);
  if (input.default !== undefined && input.default !== null) {
    // Heat lets the legacy empty-string default through for any type.
    const converted =
      input.default === '' || input.type === undefined || input.type === null ? { value: input.default } : heatDefault(type, input.default);
    if ('error' in converted) throw new HearthError('ERR_CONFIG_INVALID', { reason: `input ${input.name}: default: ${converted.error}` });
    stored.default = converted.value;
  }
  if (input.replace_on_change !== undefined && input.replace_on_change !== null) {
    if (itemBoolean(`input ${input.name}`, 'replace_on_change', input.replace_on_change)) stored.replace_on_change = true;
  }
  if (input.value !== undefined && input.value !== null) stored.value = input.value;
  return stored;
}

/** Normalises an output: type defaulted, `error_output` always present, a real boolean. */
export function normalizeOutput(output: ConfigOutputBody): StoredOutput {
  const errorOutput =
    output.error_output === undefined || output.error_output === null
      ? false
      : itemBoolean(`output ${output.name}`, 'error_output', output.error_output);
  const stored: StoredOutput = { name: output.name, type: output.type ?? 'String', error_output: errorOutput };
  if (output.description !== undefined && output.description !== null) stored.description = heatText(output.description);
  return stored;
}

function rejectDuplicates(kind: string, names: string[]): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) throw new HearthError('ERR_CONFIG_INVALID', { reason: `${kind} ${name} is declared twice` });
    seen.add(name);
  }
}

/**
 * Refuses names that can never get a value: a JSON body with a `__proto__` key is refused
 * (body-parser.ts), so no signal can set such an output, nor a deployment's input_values such an input.
 */
function rejectUnsettableNames(field: 'inputs' | 'outputs', names: string[]): void {
  const index = names.indexOf('__proto__');
  if (index >= 0) {
    throw new HearthError('ERR_CONFIG_INVALID', {
      reason: `${field}[${index}].name is __proto__, a key no JSON body may hold, so it could never get a value; rename it`,
    });
  }
}

/** Turns a row into the API shape. */
export function configFromRow(row: ConfigRow): SoftwareConfig {
  const config = row.config === null ? null : (JSON.parse(row.config) as SoftwareConfig['config']);
  return {
    id: row.id,
    name: row.name,
    group: row.group_name,
    config,
    inputs: JSON.parse(row.inputs) as StoredInput[],
    outputs: JSON.parse(row.outputs) as StoredOutput[],
    options: JSON.parse(row.options) as Record<string, unknown>,
    creation_time: heatTime(new Date(row.created_at)),
  };
}

/** The characters a cached config holds: its stored text (the parsed config is about as large). */
function cachedCharsOf(row: ConfigRow): number {
  return (row.config?.length ?? 0) + row.inputs.length + row.outputs.length + row.options.length;
}

/** The most configs one query reads (within SQLite's and PostgreSQL's limits on parameters). */
const READ_BATCH = 500;

/** Software configs: immutable once created; cached in memory by id. */
export class ConfigService {
  private readonly cache = new Map<string, SoftwareConfig & { projectId: string; chars: number }>();
  /** Characters of the configs in `cache`. */
  private cachedChars = 0;
  /** Counts deletions seen; a read that overlapped one does not cache what it read (it may be the deleted row). */
  private deletions = 0;
  /** Uncached configs asked for in this turn of the event loop, read together (see readRow). */
  private wanted = new Map<string, Promise<ConfigRow | undefined>>();
  private settle = new Map<string, { resolve: (row: ConfigRow | undefined) => void; reject: (error: unknown) => void }>();

  constructor(
    private readonly store: Store,
    /** Characters of cached configs kept at most (default 256 Mi): configs of up to 4 MiB each must not fill the heap. */
    private readonly maxCachedChars = 256 * 1024 * 1024,
  ) {}

  /** Creates a config; returns it as stored. */
  async create(projectId: string, body: SoftwareConfigCreate): Promise<SoftwareConfig> {
    const inputs = (body.inputs ?? []).map(normalizeInput);
    const outputs = (body.outputs ?? []).map(normalizeOutput);
    rejectDuplicates(
      'input',
      inputs.map((i) => i.name),
    );
    rejectDuplicates(
      'output',
      outputs.map((o) => o.name),
    );
    rejectUnsettableNames(
      'inputs',
      inputs.map((i) => i.name),
    );
    rejectUnsettableNames(
      'outputs',
      outputs.map((o) => o.name),
    );
    const id = randomUUID();
    const name = body.name === undefined || body.name === null ? null : heatText(body.name);
    const row = await this.store.write(async ({ trx, now, event }) => {
      const values: ConfigRow = {
        id,
        project_id: projectId,
        name,
        group_name: body.group ?? UNGROUPED,
        config: body.config === undefined || body.config === null ? null : JSON.stringify(body.config),
        inputs: JSON.stringify(inputs),
        outputs: JSON.stringify(outputs),
        options: JSON.stringify(body.options ?? {}),
        created_at: now,
      };
      await trx.insertInto('software_configs').values(values).execute();
      event(
        resourceEvent(
          { project_id: projectId, resource_type: 'software_config', resource_id: id, server_id: null },
          'config.created',
          `Software config ${name ?? id} created (group ${values.group_name})`,
          { group: values.group_name },
        ),
      );
      return values;
    });
    return configFromRow(row);
  }

  /** Shows a config of the project, or throws ERR_CONFIG_NOT_FOUND. */
  async get(projectId: string, id: string): Promise<SoftwareConfig> {
    const cached = this.cache.get(id);
    if (cached) {
      if (cached.projectId !== projectId) throw new HearthError('ERR_CONFIG_NOT_FOUND', { id });
      const { projectId: _owner, chars: _chars, ...config } = cached;
      return config;
    }
    const deletions = this.deletions;
    const row = await this.readRow(id);
    if (!row || row.project_id !== projectId) throw new HearthError('ERR_CONFIG_NOT_FOUND', { id });
    const config = configFromRow(row);
    // A delete (here or through another replica) seen while the row was read must not be undone by caching it.
    if (deletions !== this.deletions) return config;
    // Another get of the same id cached it meanwhile: counted once.
    this.forget(id);
    const chars = cachedCharsOf(row);
    if (this.cache.size > 10_000) this.clearCache();
    // Oldest first, until the new one fits (a config larger than the whole budget is cached alone).
    for (const oldest of this.cache.keys()) {
      if (this.cachedChars + chars <= this.maxCachedChars) break;
      this.forget(oldest);
    }
    this.cache.set(id, { ...config, projectId, chars });
    this.cachedChars += chars;
    return config;
  }

  /**
   * Reads a config row, together with the others asked for in the same turn of the event loop: a
   * server's metadata build gets the config of each of its deployments at once. One read each made
   * thousands of queries for a server with thousands of deployments, which on PostgreSQL waited for
   * a pool connection past its timeout (a 503 for that server, and for everyone else meanwhile).
   */
  private readRow(id: string): Promise<ConfigRow | undefined> {
    const asked = this.wanted.get(id);
    if (asked) return asked;
    const read = new Promise<ConfigRow | undefined>((resolve, reject) => this.settle.set(id, { resolve, reject }));
    if (this.wanted.size === 0) queueMicrotask(() => void this.readWanted());
    this.wanted.set(id, read);
    return read;
  }

  /** Reads the configs readRow was asked for, a bounded `in` list at a time. */
  private async readWanted(): Promise<void> {
    const settle = this.settle;
    this.wanted = new Map();
    this.settle = new Map();
    const ids = [...settle.keys()];
    for (let start = 0; start < ids.length; start += READ_BATCH) {
      const batch = ids.slice(start, start + READ_BATCH);
      try {
        const rows = await this.store.reader.selectFrom('software_configs').selectAll().where('id', 'in', batch).execute();
        const byId = new Map(rows.map((row) => [row.id, row]));
        for (const id of batch) settle.get(id)!.resolve(byId.get(id));
      } catch (error) {
        for (const id of batch) settle.get(id)!.reject(error);
      }
    }
  }

  /**
   * Reads a config of the project inside a write transaction, uncached (the row as the write
   * sees it, so one deleted meanwhile is caught), or throws ERR_CONFIG_NOT_FOUND.
   */
  async getForWrite(trx: Transaction<Database>, projectId: string, id: string): Promise<Pick<ConfigRow, 'id' | 'name'>> {
    const row = await trx.selectFrom('software_configs').select(['id', 'project_id', 'name']).where('id', '=', id).executeTakeFirst();
    if (!row || row.project_id !== projectId) throw new HearthError('ERR_CONFIG_NOT_FOUND', { id });
    return { id: row.id, name: row.name };
  }

  /**
   * Lists a project's configs newest first, as Heat does (its default sort: `created_at` then `id`,
   * both descending): all of them (heatclient's `software config list` does not page), or at most
   * `limit`, after the config `marker` (the last id seen), so the next page holds older ones.
   */
  async list(projectId: string, limit?: number, marker?: string): Promise<SoftwareConfigSummary[]> {
    let query = this.store.reader
      .selectFrom('software_configs')
      .select(['id', 'name', 'group_name', 'created_at'])
      .where('project_id', '=', projectId);
    if (marker) {
      const after = await this.store.reader
        .selectFrom('software_configs')
        .select(['created_at', 'id'])
        .where('id', '=', marker)
        .where('project_id', '=', projectId)
        .executeTakeFirst();
      if (!after) throw new HearthError('ERR_CONFIG_NOT_FOUND', { id: marker });
      // One row-value comparison: both dialects seek the (project_id, created_at, id) index to the
      // marker, where `a < x or (a = x and b < y)` walked every newer config on each page.
      query = query.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.created_at, after.id)));
    }
    query = query.orderBy('created_at', 'desc').orderBy('id', 'desc');
    if (limit !== undefined) query = query.limit(limit);
    const rows = await query.execute();
    return rows.map((r) => ({ id: r.id, name: r.name, group: r.group_name, creation_time: heatTime(new Date(r.created_at)) }));
  }

  /** Deletes a config; 409 while a deployment uses it. */
  async delete(projectId: string, id: string): Promise<void> {
    await this.store.write(async ({ trx, event, publish }) => {
      const row = await trx.selectFrom('software_configs').select(['id', 'project_id', 'name']).where('id', '=', id).executeTakeFirst();
      if (!row || row.project_id !== projectId) throw new HearthError('ERR_CONFIG_NOT_FOUND', { id });
      const users = await trx
        .selectFrom('software_deployments')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('config_id', '=', id)
        .executeTakeFirstOrThrow();
      if (Number(users.n) > 0) throw new HearthError('ERR_CONFIG_IN_USE', { id, count: Number(users.n) });
      await trx.deleteFrom('software_configs').where('id', '=', id).execute();
      event(
        resourceEvent(
          { project_id: projectId, resource_type: 'software_config', resource_id: id, server_id: null },
          'config.deleted',
          `Software config ${row.name ?? id} deleted`,
        ),
      );
      publish(topics.config(id));
    });
    this.deletions++;
    this.forget(id);
  }

  /** Characters of the cached configs. */
  get cachedCharacters(): number {
    return this.cachedChars;
  }

  private forget(id: string): void {
    const entry = this.cache.get(id);
    if (entry) this.cachedChars -= entry.chars;
    this.cache.delete(id);
  }

  private clearCache(): void {
    this.cache.clear();
    this.cachedChars = 0;
  }

  /** Drops a config another replica deleted; after a possibly missed change (ANY_TOPIC), all of them. */
  onFeedTopic(topic: string): void {
    if (topic !== ANY_TOPIC && !topic.startsWith(CONFIG_TOPIC)) return;
    this.deletions++;
    if (topic === ANY_TOPIC) this.clearCache();
    else this.forget(topic.slice(CONFIG_TOPIC.length));
  }
}
