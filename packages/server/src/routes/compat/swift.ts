import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../services.ts';
import { HearthError } from '../../domain/errors.ts';
import { revokedWhenGone, type Holder } from '../../auth/guest-credentials.ts';
import { verifyTempUrl } from '@hearth/protocol/signing';
import { TEMP_URL_CONTAINERS } from '../../domain/transports.ts';
import { BODY_LIMITS } from '../limits.ts';
import { assertNotExpired } from '../guest-auth.ts';
import { resourceSignal, serverSnapshot } from '../resource-actions.ts';

const ObjectParams = Type.Object({
  account: Type.String({ pattern: '^AUTH_[A-Za-z0-9_.-]{1,64}$' }),
  container: Type.String({ maxLength: 64 }),
  object: Type.String({ pattern: '^[0-9a-f]{32}$' }),
});
// A deployment's signal object for one action: its derived config id (transports.ts tempUrlPath).
const ActionObjectParams = Type.Object({ ...ObjectParams.properties, action: Type.String({ pattern: '^[0-9a-f-]{36}$' }) });
const TempUrlQuery = Type.Object({
  temp_url_sig: Type.Optional(Type.String({ maxLength: 200 })),
  temp_url_expires: Type.Optional(Type.String({ maxLength: 20 })),
});

type ObjectRequest = FastifyRequest<{
  Params: { account: string; container: string; object: string; action?: string };
  Querystring: { temp_url_sig?: string; temp_url_expires?: string };
}>;

/** What a temp URL of an unknown or revoked object gets. */
function revokedObject(): HearthError {
  return new HearthError('ERR_SIGNED_URL_INVALID', { reason: 'the object is unknown or was revoked (its resource was deleted)' });
}

/**
 * Swift temp-URL emulation (reference/server.md §4.1–4.2): POLL_TEMP_URL agents GET (and HEAD)
 * their metadata object, TEMP_URL_SIGNAL agents PUT their signal. The object name is the
 * credential's access key; the signature is checked as Swift does, and deleting the resource
 * revokes the URL.
 */
export const swiftRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const tags = ['swift-compatible'];

  async function holderOf(request: ObjectRequest, method: 'GET' | 'HEAD' | 'PUT'): Promise<Holder> {
    const { account, object } = request.params;
    const verified = verifyTempUrl({
      method,
      path: request.url.split('?', 1)[0] ?? '',
      query: request.query,
      key: services.secrets.tempUrlKey(object),
    });
    if (!verified.ok)
      throw new HearthError(verified.code === 'TempUrlExpired' ? 'ERR_SIGNED_URL_EXPIRED' : 'ERR_SIGNED_URL_INVALID', {
        reason: verified.message,
        expired_at: request.query.temp_url_expires ?? '',
      });
    const holder = await services.guestCredentials.lookup(object);
    if (!holder || `AUTH_${holder.projectId}` !== account) throw revokedObject();
    assertNotExpired(holder);
    return holder;
  }

  const read = async (request: ObjectRequest, reply: FastifyReply) => {
    if (request.params.container !== TEMP_URL_CONTAINERS.metadata)
      throw new HearthError('ERR_ROUTE_NOT_FOUND', { method: request.method, path: request.url.split('?', 1)[0] });
    const holder = await holderOf(request, request.method === 'HEAD' ? 'HEAD' : 'GET');
    if (holder.kind !== 'server') throw new HearthError('ERR_SIGNED_URL_INVALID', { reason: 'this URL is not a metadata URL' });
    const snapshot = await serverSnapshot(services, holder, request.log, revokedObject);
    void reply.header('last-modified', snapshot.lastModified).header('etag', snapshot.etag).type('application/json');
    return reply.send(snapshot.body);
  };
  app.get('/v1/:account/:container/:object', { schema: { tags, params: ObjectParams, querystring: TempUrlQuery } }, read);

  const signal = async (request: ObjectRequest, reply: FastifyReply) => {
    if (request.params.container !== TEMP_URL_CONTAINERS.signals)
      throw new HearthError('ERR_ROUTE_NOT_FOUND', { method: 'PUT', path: request.url.split('?', 1)[0] });
    const holder = await holderOf(request, 'PUT');
    const { action } = request.params;
    if (action !== undefined && holder.kind !== 'deployment')
      throw new HearthError('ERR_SIGNED_URL_INVALID', { reason: 'this URL is not a deployment signal URL' });
    // URLs without an action were issued before URLs had one: they still signal whatever action is current.
    await resourceSignal(services, holder, request.body, 'heat', action, revokedObject).catch(revokedWhenGone(holder, revokedObject));
    return reply.code(201).send();
  };

  const putOptions = { bodyLimit: BODY_LIMITS.signal };
  app.put('/v1/:account/:container/:object', { ...putOptions, schema: { tags, params: ObjectParams, querystring: TempUrlQuery } }, signal);
  app.put(
    '/v1/:account/:container/:object/:action',
    { ...putOptions, schema: { tags, params: ActionObjectParams, querystring: TempUrlQuery } },
    signal,
  );
};
