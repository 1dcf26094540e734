import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Services } from '../../services.ts';
import type { Principal } from '../../auth/principal.ts';
import { HearthError } from '../../domain/errors.ts';

/** An agent of the guest API. */
export type Agent = Extract<Principal, { kind: 'agent' }>;

/** The calling agent, or ERR_AUTH_FORBIDDEN for any other principal. */
export function onlyAgent(principal: Principal): Agent {
  if (principal.kind !== 'agent')
    throw new HearthError('ERR_AUTH_FORBIDDEN', { reason: "the guest API takes a server's agent credential, not the operator token" });
  return principal;
}

/** A signal URL's capability when the route names a deployment (`:id`) and the query carries `?token=`, else null. */
function capabilityOf(services: Services, request: FastifyRequest): Principal | null {
  const { id } = request.params as { id?: string };
  const { token, action, key } = request.query as { token?: unknown; action?: unknown; key?: unknown };
  if (id === undefined || token === undefined) return null;
  // `?token=a&token=b` is no capability: refused as a bad credential, like a wrong token.
  if (typeof token !== 'string' || (action !== undefined && typeof action !== 'string') || (key !== undefined && typeof key !== 'string'))
    throw new HearthError('ERR_AUTH_INVALID');
  return services.auth.capability(id, token, action, key);
}

/**
 * An `onRequest` hook for the guest API: authenticates before the body is read or any schema
 * runs, so a caller without a valid credential gets 401 (or the operator 403) whatever it sends,
 * and its body is never parsed. Sets `request.principal`: an agent, or a signal URL's capability.
 * A callback hook, not an async one: the cached agent of a metadata poll costs no promise.
 */
export function guestAuthHook(services: Services) {
  return (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    let known: Principal | null | undefined;
    try {
      known = capabilityOf(services, request) ?? services.auth.principalNow(request.headers);
      if (known) request.principal = known.kind === 'capability' ? known : onlyAgent(known);
    } catch (error) {
      return done(error as Error);
    }
    if (known) return done();
    // An agent whose credential is not cached yet: the store says.
    services.auth.principal(request).then(
      (principal) => {
        try {
          request.principal = onlyAgent(principal);
        } catch (error) {
          return done(error as Error);
        }
        done();
      },
      (error: unknown) => done(error as Error),
    );
  };
}

/**
 * A `preHandler` hook for the guest API: an agent's credential checked again once its body is in.
 * `guestAuthHook` ran before the body was read, and deleting a server revokes its credential at
 * once: a signal or heartbeat whose body was still arriving then must not be applied as if the
 * credential were valid. A cached identity is a live one (a revocation drops it), so this costs a
 * map lookup; an uncached one is looked up in the store. A GET has no body to wait for.
 */
export function guestRevocationHook(services: Services) {
  return (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    const principal = request.principal;
    if (request.method === 'GET' || request.method === 'HEAD' || principal?.kind !== 'agent') return done();
    if (services.servers.cachedIdentity(principal.accessKeyId)) return done();
    services.servers.byAccessKeyId(principal.accessKeyId).then(
      (server) => done(server ? undefined : new HearthError('ERR_AUTH_INVALID')),
      (error: unknown) => done(error as Error),
    );
  };
}

/** The principal `guestAuthHook` set; a route outside its scope is a programming error. */
export function guestPrincipal(request: FastifyRequest): Principal {
  if (!request.principal) throw new Error('guest route registered outside the scope of guestAuthHook');
  return request.principal;
}
