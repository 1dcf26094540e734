// Baseline for the signal benchmark's goal: hearth-server itself (buildApp, no logger, a fresh
// SQLite data dir, as servers/hearth.ts runs it) with the signal's database write removed, which is
// what the goal is stated against ("the same route with the database write removed").
//
// Everything on the request's path is hearth's: fastify and its options, the app-wide hooks
// (request id, Prometheus counters and histogram), the guest route with its schemas and body
// limit, the agent's credential check (the first call of each agent looks its server up in this
// app's own store; the last-seen time is written in batches, as in hearth), the error handlers and
// the reply's serialisation. The one thing replaced is SignalService.signal: instead of the
// prepared write (the writer thread's transaction: read the deployment and its config, check the
// idempotency key, insert the signal and its event, update the deployment, COMMIT + fsync, publish)
// it answers the ack at once.
//
// The agents are this app's own: the bench registers SIGNAL_SERVERS servers here and sends the same
// deployment ids and body as to hearth, with these servers' tokens.
// argv: <port> <dataDir>; env: BENCH_ADMIN_TOKEN, BENCH_SECRET_KEY.
import type { SignalAck } from '@hearth/protocol';
import { buildApp } from '../../../packages/server/src/app.ts';
import { announceReady, boundLifetime } from './lifetime.ts';

const port = Number(process.argv[2]);
const dataDir = process.argv[3];
if (!port || !dataDir) throw new Error('usage: hearth-no-db-signal.ts <port> <dataDir>');
const app = await buildApp({
  dataDir,
  adminToken: process.env.BENCH_ADMIN_TOKEN ?? 'bench-admin-token',
  secretKey: process.env.BENCH_SECRET_KEY ?? 'bench-secret-key-0123456789abcdef',
  publicUrl: `http://127.0.0.1:${port}`,
});
app.services.signals.signal = (_principal, id, body): Promise<SignalAck> =>
  Promise.resolve({
    deployment_id: id,
    status: body.deploy_status_code ? 'FAILED' : 'COMPLETE',
    status_reason: 'Outputs received',
    duplicate: false,
  });
boundLifetime(app);
await app.listen({ host: '127.0.0.1', port });
announceReady(port);
