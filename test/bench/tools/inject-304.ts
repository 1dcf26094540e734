// Diagnostic (not run by `npm run bench`): the JavaScript cost of one metadata 304, hearth vs a
// bare fastify route, through inject() (no sockets), interleaved rounds. Usage:
//   node --import tsx test/bench/tools/inject-304.ts [requests per round=20000] [rounds=5]
import Fastify from 'fastify';
import { testApp, registerServer } from '../../../packages/server/src/test-support.ts';

const N = Number(process.argv[2] ?? 20_000);
const ROUNDS = Number(process.argv[3] ?? 5);
const { app, done } = await testApp();
try {
  const server = await registerServer(app);
  const first = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
  const etag = first.headers.etag as string;
  const bare = Fastify({ logger: false });
  bare.get('/v1/guest/metadata', (request, reply) => {
    void reply.header('etag', etag).header('cache-control', 'no-cache');
    if (request.headers['if-none-match'] === etag) return reply.code(304).send();
    return reply.type('application/json').send(first.body);
  });
  await bare.ready();
  const headers = { ...server.auth, 'if-none-match': etag };
  const measure = async (target: Pick<typeof app, 'inject'>): Promise<number> => {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) {
      const reply = await target.inject({ url: '/v1/guest/metadata', headers });
      if (reply.statusCode !== 304) throw new Error(`expected 304, got ${reply.statusCode}`);
    }
    return Number(process.hrtime.bigint() - t0) / N / 1000;
  };
  await measure(app);
  await measure(bare);
  const rows: Array<[number, number]> = [];
  for (let r = 0; r < ROUNDS; r++) rows.push([await measure(app), await measure(bare)]);
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const h = med(rows.map((x) => x[0]));
  const b = med(rows.map((x) => x[1]));
  console.log(`µs per inject (median of ${ROUNDS}): hearth ${h.toFixed(1)}, bare ${b.toFixed(1)}, hearth extra ${(h - b).toFixed(1)}`);
  await bare.close();
} finally {
  await done();
}
