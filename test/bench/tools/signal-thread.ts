// Diagnostic (not run by `npm run bench`): durable signals through SignalService in one process,
// `INFLIGHT` at a time, on a fresh store with `COUNT` IN_PROGRESS deployments. Prints signals/s,
// the process CPU per signal and the main thread's event-loop utilisation (what is left for HTTP).
// Usage: node --import tsx test/bench/tools/signal-thread.ts [count=20000] [inflight=64]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { testApp, registerServer, createConfig } from '../../../packages/server/src/test-support.ts';

const COUNT = Number(process.argv[2] ?? 20_000);
const INFLIGHT = Number(process.argv[3] ?? 64);
const { app, done } = await testApp();
const dir = mkdtempSync(join(tmpdir(), 'hearth-tool-'));
try {
  const server = await registerServer(app);
  const configId = await createConfig(app);
  const { store } = app.services;
  const ids: string[] = [];
  await store.write(async ({ trx, now }) => {
    for (let i = 0; i < COUNT; i++) {
      const id = crypto.randomUUID();
      ids.push(id);
      await trx
        .insertInto('software_deployments')
        .values({
          id,
          project_id: 'default',
          server_id: server.id,
          config_id: configId,
          derived_config_id: crypto.randomUUID(),
          derived_at: now,
          name: null,
          action: 'CREATE',
          status: 'IN_PROGRESS',
          status_reason: 'Deploy data available',
          input_values: '{}',
          output_values: null,
          signal_transport: 'HEARTH_SIGNAL',
          timeout_s: 3600,
          deadline_at: '2999-01-01T00:00:00.000Z',
          fetched_at: null,
          last_heartbeat_at: null,
          created_at: now,
          updated_at: null,
        })
        .execute();
    }
  });
  const principal = { kind: 'agent' as const, serverId: server.id, projectId: 'default', accessKeyId: 'x' };
  const body = { deploy_stdout: `${'configured step ok\n'.repeat(45)}done\n`, deploy_stderr: '', deploy_status_code: 0, result: 'ok' };
  // warm-up: the thread starts and loads its modules
  await app.services.signals.signal(principal, ids.pop()!, body);
  let next = 0;
  const elu0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: INFLIGHT }, async () => {
      while (next < ids.length) await app.services.signals.signal(principal, ids[next++]!, body);
    }),
  );
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const elu = performance.eventLoopUtilization(elu0);
  const n = ids.length;
  console.log(
    `${n} signals in ${ms.toFixed(0)} ms: ${Math.round((n / ms) * 1000)}/s; process CPU ${((cpu.user + cpu.system) / n).toFixed(1)} µs/signal ` +
      `(user ${(cpu.user / n).toFixed(1)}, sys ${(cpu.system / n).toFixed(1)}); main-thread ELU ${(elu.utilization * 100).toFixed(0)} % = ` +
      `${((elu.active * 1000) / n).toFixed(1)} µs/signal`,
  );
} finally {
  await done();
  rmSync(dir, { recursive: true, force: true });
}
