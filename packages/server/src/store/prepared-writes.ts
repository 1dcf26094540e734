// Prepared writes: logic over queries compiled once by Kysely, taking and returning plain data,
// so that it runs beside the database (the SQLite writer thread) or on a PostgreSQL connection.
// The group committer that queues them is write-queue.ts.
import {
  DummyDriver,
  Kysely,
  PostgresQueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type Compilable,
} from 'kysely';
import type { Database, NewEvent } from './schema.ts';
import { checkStorable } from './text-guard.ts';

/** A query compiled once by Kysely, with named parameters bound at each run. */
export interface Precompiled<P, R> {
  /** The SQL text, as Kysely's SQLite dialect compiled it (`?` placeholders). */
  readonly sql: string;
  /** The same query in PostgreSQL's dialect (`$1` placeholders, in the same order). */
  readonly pgSql: string;
  /** For each `?` in order: the parameter's name, or the constant Kysely put there. */
  readonly slots: ReadonlyArray<{ name: string } | { value: unknown }>;
  /** Type only: the parameters and the row type. */
  readonly types?: [P, R];
}

const PARAM_MARK = '\u0000hearth-param:';
/** Compile-only Kysely instances (they never connect). The adapter only matters for migrations. */
function compileOnly(compiler: () => SqliteQueryCompiler | PostgresQueryCompiler): Kysely<Database> {
  return new Kysely<Database>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (db) => new SqliteIntrospector(db),
      createQueryCompiler: compiler,
    },
  });
}
const compiler = compileOnly(() => new SqliteQueryCompiler());
const pgCompiler = compileOnly(() => new PostgresQueryCompiler());

/**
 * Compiles a query once (SQLite dialect). `build` gets a compile-only Kysely and `p`, whose
 * properties stand for the named parameters; each run binds them from a plain object. `p` has no
 * keys of its own: name each column (`values({ a: p.a })`), never spread or pass `p` whole.
 */
export function precompile<P extends Record<string, unknown>, R>(build: (db: Kysely<Database>, p: P) => Compilable<R>): Precompiled<P, R> {
  const p = new Proxy({}, { get: (_target, name) => `${PARAM_MARK}${String(name)}` }) as P;
  const compiled = build(compiler, p).compile();
  const slots = compiled.parameters.map((value) =>
    typeof value === 'string' && value.startsWith(PARAM_MARK) ? { name: value.slice(PARAM_MARK.length) } : { value },
  );
  const pg = build(pgCompiler, p).compile();
  if (pg.parameters.length !== compiled.parameters.length || pg.parameters.some((value, i) => value !== compiled.parameters[i])) {
    throw new Error(`precompile: the dialects bind different parameters for ${compiled.sql}`);
  }
  return { sql: compiled.sql, pgSql: pg.sql, slots };
}

/**
 * The values of a precompiled query's placeholders, in order, from named parameters. A text value
 * with a NUL is refused here (UnstorableTextError), as the Kysely plugin refuses it elsewhere.
 */
export function bindParams<P>(query: Precompiled<P, unknown>, params: P): unknown[] {
  return query.slots.map((slot) => {
    if (!('name' in slot)) return slot.value;
    const value = (params as Record<string, unknown>)[slot.name];
    checkStorable(value, slot.name);
    return value;
  });
}

/** One statement a prepared write asks its driver to run; the driver resumes it with the answer. */
export interface Step {
  op: 'get' | 'run';
  query: Precompiled<unknown, unknown>;
  params: unknown;
}

/** A prepared write's body: yields statements (`yield* ctx.get(...)`), returns its result. */
export type PreparedBody<R> = Generator<Step, R, unknown>;

/**
 * What a prepared write gets: precompiled statements on the open transaction, the clock, effects.
 * Statements are yielded (`const row = yield* ctx.get(q, p)`), so one body runs synchronously on
 * the SQLite writer thread and asynchronously on a PostgreSQL connection.
 */
export interface PreparedWriteContext {
  /** The batch's timestamp (ISO, ms). */
  now: string;
  /** First row of a precompiled query, or undefined. */
  get<P, R>(query: Precompiled<P, R>, params: P): PreparedBody<R | undefined>;
  /** Runs a precompiled statement; returns how many rows it changed. */
  run<P, R>(query: Precompiled<P, R>, params: P): PreparedBody<number>;
  /** Feed topics to publish once the transaction has committed. */
  publish: (topic: string) => void;
  /** An event row to insert in the same transaction. */
  event: (event: Omit<NewEvent, 'time'>) => void;
}

/**
 * A prepared write: logic over precompiled statements that takes and returns plain
 * (structured-clonable) data, so it can run on the store's writer thread, beside the database. It
 * follows the WriteUnit convention: a HearthError is thrown before anything is written.
 */
export type PreparedWriteFn<A, R> = (ctx: PreparedWriteContext, args: A) => PreparedBody<R>;

/** The statement helpers of a PreparedWriteContext: each yields one Step and returns the answer. */
export const preparedSteps: Pick<PreparedWriteContext, 'get' | 'run'> = {
  *get<P, R>(query: Precompiled<P, R>, params: P): PreparedBody<R | undefined> {
    return (yield { op: 'get', query: query, params }) as R | undefined;
  },
  *run<P, R>(query: Precompiled<P, R>, params: P): PreparedBody<number> {
    return (yield { op: 'run', query: query, params }) as number;
  },
};

/** Runs a prepared body to its end, answering each step synchronously. */
export function driveSync<R>(body: PreparedBody<R>, answer: (step: Step) => unknown): R {
  let next = body.next();
  while (!next.done) next = body.next(answer(next.value));
  return next.value;
}

/** Runs a prepared body to its end, answering each step asynchronously. */
export async function driveAsync<R>(body: PreparedBody<R>, answer: (step: Step) => Promise<unknown>): Promise<R> {
  let next = body.next();
  while (!next.done) next = body.next(await answer(next.value));
  return next.value;
}

/** Names a prepared write: the module that exports it in `preparedWrites`, and its key there. */
export interface PreparedWrite<A, R> {
  readonly module: string;
  readonly name: string;
  /** Type only. */
  readonly types?: [A, R];
}

/** A module of prepared writes exports them as `preparedWrites`. */
export interface PreparedWriteModule {
  preparedWrites: Record<string, PreparedWriteFn<never, unknown>>;
}

/** Declares a prepared write; `module` is the declaring module's `import.meta.url`. */
export function preparedWrite<A, R>(module: string, name: string): PreparedWrite<A, R> {
  return { module, name };
}

/** One queued prepared write, as sent to whatever runs them. */
export interface PreparedCall {
  module: string;
  name: string;
  args: unknown;
}

/** The outcome of one call or unit in a batch. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** A prepared call handed to a runner, with the settling functions of its caller's promise. */
export interface PreparedTask {
  call: PreparedCall;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Runs prepared writes in group-committed transactions of its own (the SQLite writer thread). It
 * forms the transactions itself: the calls handed over while one transaction runs and commits
 * share the next one, so it is never idle while calls wait.
 */
export interface PreparedRunner {
  /**
   * Hands tasks over. Each settles after the transaction that ran its call has committed;
   * `onCommit` gets that transaction's topics first.
   */
  submit(tasks: PreparedTask[], onCommit: (topics: Set<string>) => void): void;
  /** Tasks handed over and not settled yet. */
  readonly outstanding: number;
  /** Resolves once every task handed over so far has settled. */
  settled(): Promise<void>;
}
