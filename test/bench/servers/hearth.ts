// hearth-server itself, as the benchmark runs it: the real app (buildApp), no logger (as at
// `--log-level warn`, so an agent's unchanged poll is answered before fastify routes it), listening on
// 127.0.0.1. Without a database URL it is SQLite in the data dir (WAL, synchronous=FULL, group
// commit); with one it is a PostgreSQL replica (several may share the database).
// argv: <port> <dataDir> [databaseUrl]; env: BENCH_ADMIN_TOKEN, BENCH_SECRET_KEY, BENCH_PUBLIC_URL
// (the URL agents are told; default this server's own, and replicas behind one balancer share one).
import { buildApp } from '../../../packages/server/src/app.ts';
import { announceReady, boundLifetime } from './lifetime.ts';

const port = Number(process.argv[2]);
const dataDir = process.argv[3];
const databaseUrl = process.argv[4];
if (!port || !dataDir) throw new Error('usage: hearth.ts <port> <dataDir> [databaseUrl]');
const app = await buildApp({
  dataDir,
  databaseUrl,
  adminToken: process.env.BENCH_ADMIN_TOKEN ?? 'bench-admin-token',
  secretKey: process.env.BENCH_SECRET_KEY ?? 'bench-secret-key-0123456789abcdef',
  publicUrl: process.env.BENCH_PUBLIC_URL || `http://127.0.0.1:${port}`,
});
boundLifetime(app);
await app.listen({ host: '127.0.0.1', port });
announceReady(port);
