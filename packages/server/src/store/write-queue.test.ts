import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TEST_DIALECT, testApp, registerServer, createConfig, createDeployment } from '../test-support.ts';
import { isHearthError } from '../domain/errors.ts';
import type { Kysely } from 'kysely';
import type { FastifyInstance } from 'fastify';
import type { Database } from './schema.ts';
import { preparedWrite, type PreparedRunner, type PreparedTask, type PreparedWriteModule } from './prepared-writes.ts';
import { executePrepared, openConnection, statementCache } from './sqlite.ts';
import { sqliteFile } from './store.ts';
import { PREPARED_HANDOFF_AT, WriteQueue } from './write-queue.ts';

const signalsModule = new URL('../domain/signals.ts', import.meta.url).href;

/** Two IN_PROGRESS deployments of one server, and that server's agent as a principal. */
async function twoDeployments(app: FastifyInstance) {
  const server = await registerServer(app);
  const configId = await createConfig(app);
  const [a, b] = [await createDeployment(app, configId, server.id), await createDeployment(app, configId, server.id)];
  return { a, b, principal: { kind: 'agent' as const, serverId: server.id, projectId: 'default', accessKeyId: 'unused' } };
}

test('prepared writes on the writer thread: one failing call does not take its batch with it', async () => {
  const { app, done } = await testApp();
  try {
    const { a, b, principal } = await twoDeployments(app);
    const body = { deploy_stdout: 'ok', deploy_status_code: 0, result: 'R' };
    const { signals, store } = app.services;
    // Queued in the same turn: one batch, one transaction on the writer thread.
    const [first, bogus, notFound, second] = await Promise.allSettled([
      signals.signal(principal, a, body),
      store.writePrepared(preparedWrite<object, unknown>(signalsModule, 'no-such-write'), {}),
      signals.signal(principal, '00000000-0000-4000-8000-000000000000', body),
      signals.signal(principal, b, { ...body, deploy_status_code: 3 }),
    ]);
    assert.equal(first.status === 'fulfilled' && first.value.status, 'COMPLETE');
    assert.equal(second.status === 'fulfilled' && second.value.status, 'FAILED');
    assert.ok(bogus.status === 'rejected' && /no prepared write no-such-write/.test(String(bogus.reason)), bogus.status);
    assert.ok(notFound.status === 'rejected' && isHearthError(notFound.reason) && notFound.reason.code === 'ERR_DEPLOYMENT_NOT_FOUND');

    const stored = await store.reader.selectFrom('signals').select('deployment_id').execute();
    assert.deepEqual(stored.map((r) => r.deployment_id).sort(), [a, b].sort());
    const events = await store.reader
      .selectFrom('events')
      .select(['resource_id', 'type', 'message', 'data'])
      .where('resource_id', 'in', [a, b])
      .orderBy('id')
      .execute();
    const settled = events.filter((e) => e.type !== 'deployment.created');
    assert.deepEqual(
      settled.map((e) => `${e.resource_id === a ? 'a' : 'b'} ${e.type}`),
      ['a deployment.completed', 'b deployment.failed'],
    );
    // One event per signal says what arrived and what it did.
    assert.equal(settled[0]!.message, 'Signal received from the agent (status code 0): deployment CREATE complete: Outputs received');
    assert.match(settled[1]!.message, /^Signal received from the agent \(status code 3\): deployment CREATE failed: deploy_status_code : /);
    const data = JSON.parse(settled[1]!.data) as Record<string, unknown>;
    assert.deepEqual(Object.keys(data).sort(), ['deploy_status_code', 'idempotency_key', 'status']);
    assert.equal(data.status, 'FAILED');
    // The same signal again is acknowledged as a duplicate and writes nothing.
    const again = await signals.signal(principal, a, body);
    assert.equal(again.duplicate, true);
    assert.equal((await store.reader.selectFrom('signals').select('deployment_id').execute()).length, 2);
  } finally {
    await done();
  }
});

test(
  'a transaction of 150 signals writes their 150 events in call order (multi-row inserts of up to 64)',
  { skip: TEST_DIALECT !== 'sqlite' && 'the SQLite writer thread only' },
  async () => {
    const { app, dataDir, done } = await testApp();
    try {
      const server = await registerServer(app);
      const configId = await createConfig(app);
      const ids: string[] = [];
      for (let i = 0; i < 150; i++) ids.push(await createDeployment(app, configId, server.id));
      const principal = { kind: 'agent' as const, serverId: server.id, projectId: 'default', accessKeyId: 'unused' };
      // Every call in one executePrepared: one transaction, so 150 events go in as 64 + 64 + 22.
      const connection = openConnection(sqliteFile(dataDir), false);
      const modules = new Map([[signalsModule, (await import(signalsModule)) as PreparedWriteModule]]);
      const calls = ids.map((id, i) => ({
        module: signalsModule,
        name: 'signal',
        args: { principal, id, body: { deploy_status_code: i % 3 === 0 ? 1 : 0 }, clientKey: undefined },
      }));
      let result;
      try {
        result = executePrepared(connection, statementCache(connection), modules, calls);
      } finally {
        connection.close();
      }
      assert.ok(
        result.outcomes.every((o) => o.ok),
        JSON.stringify(result.outcomes.find((o) => !o.ok)),
      );
      const settled = await app.services.store.reader
        .selectFrom('events')
        .select(['resource_id', 'type', 'time'])
        .where('type', '!=', 'deployment.created')
        .where('resource_type', '=', 'software_deployment')
        .orderBy('id')
        .execute();
      assert.deepEqual(
        settled.map((e) => e.resource_id),
        ids,
        'one event per signal, in the order of the calls',
      );
      assert.deepEqual(
        settled.map((e) => e.type),
        ids.map((_, i) => (i % 3 === 0 ? 'deployment.failed' : 'deployment.completed')),
      );
      assert.equal(new Set(settled.map((e) => e.time)).size, 1, 'one transaction, one clock');
      assert.deepEqual(
        result.topics.filter((t) => t.startsWith('events:')),
        ['events:default'],
      );
    } finally {
      await done();
    }
  },
);

test('a unit queued behind prepared writes runs once they have committed; writes queued behind the unit wait for it', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const configId = await createConfig(app);
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await createDeployment(app, configId, server.id));
    const principal = { kind: 'agent' as const, serverId: server.id, projectId: 'default', accessKeyId: 'unused' };
    const { signals, store } = app.services;
    const count = () => store.write(async ({ trx }) => (await trx.selectFrom('signals').select('deployment_id').execute()).length);
    const before = ids.slice(0, 3).map((id) => signals.signal(principal, id, { deploy_status_code: 0 }));
    const seen = count();
    const after = signals.signal(principal, ids[3]!, { deploy_status_code: 0 });
    assert.equal(await seen, 3);
    await Promise.all([...before, after]);
    assert.equal(await count(), 4);
  } finally {
    await done();
  }
});

/** The end of the current turn of the event loop (the write queue's own schedule). */
const turn = () => new Promise((resolve) => setImmediate(resolve));
/** `n` consecutive numbers from `from`. */
const numbers = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

/** A runner that records each hand-over and settles its tasks when told (each with its call's args). */
class RecordingRunner implements PreparedRunner {
  readonly handedOver: number[][] = [];
  private held: PreparedTask[] = [];
  get outstanding(): number {
    return this.held.length;
  }
  submit(tasks: PreparedTask[]): void {
    this.handedOver.push(tasks.map((t) => t.call.args as number));
    this.held.push(...tasks);
  }
  settled(): Promise<void> {
    return this.outstanding === 0 ? Promise.resolve() : new Promise((resolve) => setImmediate(() => resolve(this.settled())));
  }
  settleAll(): void {
    for (const task of this.held.splice(0)) task.resolve(task.call.args);
  }
}

test('prepared writes go to the runner as soon as enough are queued, never ahead of a unit queued before them', async () => {
  const write = preparedWrite<number, number>('module', 'write');
  // Units only need a transaction that runs them: the queue inserts no events for units that record none.
  const db = { transaction: () => ({ execute: (body: (trx: unknown) => unknown) => body({}) }) } as unknown as Kysely<Database>;
  const runner = new RecordingRunner();
  const queue = new WriteQueue(db, { onCommit: () => undefined, prepared: runner });

  // Fewer than PREPARED_HANDOFF_AT wait for the end of the turn; that many go at once, in order.
  const first = numbers(1, PREPARED_HANDOFF_AT - 1).map((n) => queue.runPrepared(write, n));
  assert.deepEqual(runner.handedOver, [], 'not handed over within the turn');
  await turn();
  assert.deepEqual(runner.handedOver, [numbers(1, PREPARED_HANDOFF_AT - 1)], 'handed over at the end of the turn');
  const second = numbers(100, PREPARED_HANDOFF_AT + 1).map((n) => queue.runPrepared(write, n));
  assert.deepEqual(runner.handedOver.slice(1), [numbers(100, PREPARED_HANDOFF_AT)], 'handed over within the turn, at the threshold');
  await turn();
  assert.deepEqual(runner.handedOver.slice(2), [[100 + PREPARED_HANDOFF_AT]], 'the rest at the end of the turn');
  runner.settleAll();
  assert.deepEqual(await Promise.all([...first, ...second]), [
    ...numbers(1, PREPARED_HANDOFF_AT - 1),
    ...numbers(100, PREPARED_HANDOFF_AT + 1),
  ]);

  // A unit queued first holds every prepared write behind it, however many: queued in the same turn...
  let release!: () => void;
  const unitDone = new Promise<void>((resolve) => (release = resolve));
  const order: string[] = [];
  const unit = queue.run(async () => {
    order.push('unit started');
    await unitDone;
    order.push('unit done');
    return 'unit';
  });
  const behind = numbers(200, PREPARED_HANDOFF_AT * 2).map((n) => queue.runPrepared(write, n));
  assert.equal(runner.handedOver.length, 3, 'nothing passes a queued unit');
  await turn();
  assert.deepEqual(order, ['unit started']);
  // ... and while it runs.
  const later = numbers(300, PREPARED_HANDOFF_AT * 2).map((n) => queue.runPrepared(write, n));
  await turn();
  assert.equal(runner.handedOver.length, 3, 'nothing passes a running unit');
  release();
  assert.equal(await unit, 'unit');
  await turn();
  assert.deepEqual(runner.handedOver.slice(3), [[...numbers(200, PREPARED_HANDOFF_AT * 2), ...numbers(300, PREPARED_HANDOFF_AT * 2)]]);
  assert.deepEqual(order, ['unit started', 'unit done']);
  runner.settleAll();
  assert.equal((await Promise.all([...behind, ...later])).length, PREPARED_HANDOFF_AT * 4);
  await queue.drained();
});

test('prepared writes the runner cannot take fail at once, each caller with the error, and the queue goes on', async () => {
  const write = preparedWrite<number, number>('module', 'write');
  const runner = new RecordingRunner();
  const failure = new Error('the writer thread cannot start');
  let failures = 2;
  const submit = runner.submit.bind(runner);
  runner.submit = (tasks) => {
    if (failures-- > 0) throw failure;
    submit(tasks);
  };
  const queue = new WriteQueue({} as Kysely<Database>, { onCommit: () => undefined, prepared: runner });
  // Handed over within the turn (at the threshold), then at its end (fewer): both refused.
  for (const n of [PREPARED_HANDOFF_AT, 1]) {
    const results = await Promise.allSettled(numbers(0, n).map((i) => queue.runPrepared(write, i)));
    assert.deepEqual(
      results.map((r) => r.status === 'rejected' && r.reason === failure),
      Array<boolean>(n).fill(true),
      `${n} callers, each refused`,
    );
  }
  const next = queue.runPrepared(write, 7);
  await turn();
  runner.settleAll();
  assert.equal(await next, 7);
  assert.deepEqual(runner.handedOver, [[7]]);
});

test('a store closes its writer thread when it closes', async () => {
  const { app, done } = await testApp();
  const server = await registerServer(app);
  const configId = await createConfig(app);
  const id = await createDeployment(app, configId, server.id);
  const principal = { kind: 'agent' as const, serverId: server.id, projectId: 'default', accessKeyId: 'unused' };
  const ack = await app.services.signals.signal(principal, id, {});
  assert.equal(ack.status, 'COMPLETE');
  await done(); // must return: the thread ends with the store
});

test('a batch that fails because the database is gone is not retried unit by unit (it could apply one twice); a bug in one unit is', async () => {
  for (const [failure, expectedTransactions] of [
    [Object.assign(new Error('Connection terminated unexpectedly')), 1],
    [new TypeError('a bug in one unit'), 4],
  ] as Array<[Error, number]>) {
    let transactions = 0;
    // Only the transaction entry point is used by the queue: each attempt fails the same way.
    const db = {
      transaction: () => ({
        execute: () => {
          transactions++;
          return Promise.reject(failure);
        },
      }),
    } as unknown as Kysely<Database>;
    const queue = new WriteQueue(db, { onCommit: () => undefined });
    const results = await Promise.allSettled([1, 2, 3].map(() => queue.run(() => Promise.resolve('written'))));
    assert.deepEqual(
      results.map((r) => r.status === 'rejected' && r.reason === failure),
      [true, true, true],
      'every caller gets the failure',
    );
    assert.equal(transactions, expectedTransactions, failure.message);
  }
});

test(
  'a call the writer thread cannot be handed fails alone, and the server stays up',
  { skip: TEST_DIALECT === 'postgres' ? 'no writer thread on PostgreSQL' : false },
  async () => {
    const { app, done } = await testApp();
    try {
      const { a, b, principal } = await twoDeployments(app);
      const body = { deploy_stdout: 'ok', deploy_status_code: 0 };
      // Deeper than structured clone can copy (the routes refuse such bodies long before this).
      let deep: unknown = [];
      for (let i = 0; i < 200_000; i++) deep = [deep];
      const { signals, store } = app.services;
      const [good, unposted] = await Promise.allSettled([
        signals.signal(principal, a, body),
        signals.signal(principal, b, { ...body, result: deep }),
      ]);
      assert.equal(good.status === 'fulfilled' && good.value.status, 'COMPLETE');
      assert.equal(unposted.status, 'rejected');
      // The writer thread still takes calls, and the unposted signal changed nothing.
      assert.equal((await signals.signal(principal, b, body)).status, 'COMPLETE');
      const stored = await store.reader.selectFrom('signals').select('deployment_id').execute();
      assert.deepEqual(stored.map((r) => r.deployment_id).sort(), [a, b].sort());
    } finally {
      await done();
    }
  },
);

test('a batch with more events than one INSERT can bind (5,000) commits them all, in order', async () => {
  const { app, done } = await testApp();
  try {
    const { store } = app.services;
    const before = await store.reader
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    await store.write(async ({ event }) => {
      for (let i = 0; i < 5000; i++) {
        event({
          project_id: 'default',
          type: 'test.bulk',
          resource_type: 'test',
          resource_id: 'bulk',
          server_id: null,
          message: `${i}`,
          data: '{}',
        });
      }
    });
    const rows = await store.reader.selectFrom('events').select(['id', 'message']).where('type', '=', 'test.bulk').orderBy('id').execute();
    assert.equal(rows.length, 5000);
    assert.deepEqual(
      rows.map((row) => Number(row.message)),
      Array.from({ length: 5000 }, (_, i) => i),
    );
    const after = await store.reader
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    assert.equal(Number(after.n) - Number(before.n), 5000);
  } finally {
    await done();
  }
});
