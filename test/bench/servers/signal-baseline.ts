// Baseline for the signal benchmark: hearth's signal route with the database taken out.
//
// Same as hearth (imported from packages/server, not copied): the route path, its params /
// querystring / headers / body schemas (the body is @hearth/protocol's DeploymentSignal), the
// bodyLimit, hearth's Ajv validator compiler, hearth's lenient JSON body parser and error handlers,
// the guest `preValidation` hook, and the agent credential check as hearth does it for a known
// agent (parse `Authorization: Bearer <access key id>:<secret>`, look the expected secret up in an
// in-memory Map filled on first use by HMAC-SHA256 from the master key, hearth's constant-time
// secretsEqual). The reply is the same ack shape, built from the URL's id.
//
// Left out (this is what the hearth/baseline ratio prices): the server lookup on an agent's first
// call and the last-seen touch, everything in SignalService.signal (the group-commit queue, the SELECT of the
// deployment row, the config lookup, the idempotency digest, signalOutcome, the INSERTs of the
// signal and two events, the UPDATE of the deployment, COMMIT + fsync, the feed publish), and
// hearth's app-wide extras (request counters and timings, swagger, request-id header).
//
// argv: <port>; env: BENCH_SECRET_KEY (the same master key hearth runs with, so hearth's agent
// credentials are valid here too).
import Fastify from 'fastify';
import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DeploymentSignal, Uuid, type SignalAck } from '@hearth/protocol';
import { createValidatorCompiler } from '../../../packages/server/src/validation.ts';
import { installLenientJsonParser } from '../../../packages/server/src/body-parser.ts';
import { installErrorHandlers } from '../../../packages/server/src/app-errors.ts';
import { agentToken } from '../../../packages/server/src/auth/hooks.ts';
import { SecretDeriver, secretsEqual } from '../../../packages/server/src/auth/secrets.ts';
import { HearthError } from '../../../packages/server/src/domain/errors.ts';
import { BODY_LIMITS } from '../../../packages/server/src/routes/limits.ts';
import { announceReady, boundLifetime } from './lifetime.ts';

// The same three schemas as packages/server/src/routes/guest/index.ts (not exported there).
const DeploymentParams = Type.Object({ id: Uuid });
const CapabilityQuery = Type.Object({ token: Type.Optional(Type.String({ maxLength: 128 })) }, { additionalProperties: false });
const SignalHeaders = Type.Object({ 'idempotency-key': Type.Optional(Type.String({ minLength: 1, maxLength: 120 })) });

const port = Number(process.argv[2]);
const secrets = new SecretDeriver(process.env.BENCH_SECRET_KEY ?? 'bench-secret-key-0123456789abcdef');
/** access key id -> derived secret, like ServerService's identity cache (no database here). */
const known = new Map<string, string>();
const expectedSecret = (accessKeyId: string): string => {
  let secret = known.get(accessKeyId);
  if (secret === undefined) known.set(accessKeyId, (secret = secrets.agentSecret(accessKeyId)));
  return secret;
};
const app = Fastify({ logger: false, bodyLimit: 64 * 1024 });
app.setValidatorCompiler(createValidatorCompiler());
installLenientJsonParser(app);
installErrorHandlers(app);
const guestSignal: FastifyPluginAsyncTypebox = async (guest) => {
  guest.addHook('preValidation', async (request) => {
    request.body ??= {};
  });
  guest.post(
    '/deployments/:id/signal',
    {
      bodyLimit: BODY_LIMITS.signal,
      schema: { params: DeploymentParams, querystring: CapabilityQuery, headers: SignalHeaders, body: DeploymentSignal },
    },
    async (request): Promise<SignalAck> => {
      const token = agentToken(request);
      if (!token) throw new HearthError('ERR_AUTH_MISSING');
      if (!token.accessKeyId || !secretsEqual(token.secret, expectedSecret(token.accessKeyId))) throw new HearthError('ERR_AUTH_INVALID');
      return { deployment_id: request.params.id, status: 'COMPLETE', status_reason: 'Outputs received', duplicate: false };
    },
  );
};
await app.register(guestSignal, { prefix: '/v1/guest' });
boundLifetime(app);
await app.listen({ host: '127.0.0.1', port });
announceReady(port);
