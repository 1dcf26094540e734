// Baseline for the metadata benchmark: a bare fastify 5 app (logger off, default options) with one
// route that answers 304 when If-None-Match matches its ETag, else 200 with the document. Same as
// the `/meta` route of shared/reference/performance.md. It does no authentication.
// argv: <port> <bodyFile> <etag>  (the orchestrator passes hearth's own document and ETag, so the
// wrk request is byte-for-byte the same for both servers).
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import { announceReady, boundLifetime } from './lifetime.ts';

const port = Number(process.argv[2]);
const body = readFileSync(process.argv[3]!, 'utf8');
const etag = process.argv[4]!;
const app = Fastify({ logger: false });
app.get('/v1/guest/metadata', (request, reply) => {
  void reply.header('etag', etag).header('cache-control', 'no-cache');
  if (request.headers['if-none-match'] === etag) return reply.code(304).send();
  return reply.type('application/json').send(body);
});
boundLifetime(app);
await app.listen({ host: '127.0.0.1', port });
announceReady(port);
