// hearth-server itself, as the benchmark runs it: the real app (buildApp), no logger, SQLite in a
// fresh data dir (WAL, synchronous=FULL, group commit), listening on 127.0.0.1.
// argv: <port> <dataDir>; env: BENCH_ADMIN_TOKEN, BENCH_SECRET_KEY.
import { buildApp } from '../../../packages/server/src/app.ts';
import { announceReady, boundLifetime } from './lifetime.ts';

const port = Number(process.argv[2]);
const dataDir = process.argv[3];
if (!port || !dataDir) throw new Error('usage: hearth.ts <port> <dataDir>');
const app = await buildApp({
  dataDir,
  adminToken: process.env.BENCH_ADMIN_TOKEN ?? 'bench-admin-token',
  secretKey: process.env.BENCH_SECRET_KEY ?? 'bench-secret-key-0123456789abcdef',
  publicUrl: `http://127.0.0.1:${port}`,
});
boundLifetime(app);
await app.listen({ host: '127.0.0.1', port });
announceReady(port);
