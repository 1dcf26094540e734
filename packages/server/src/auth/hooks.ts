import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { HearthError } from '../domain/errors.ts';
import type { AgentIdentity, ServerService } from '../domain/servers.ts';
import { secretsEqual, signalTokenSubject, type SecretDeriver } from './secrets.ts';
import type { Principal } from './principal.ts';

/** The agent token from `Authorization: Bearer <ak>:<secret>` or `X-Auth-Token: <ak>:<secret>`. */
export function agentToken(request: FastifyRequest): { accessKeyId: string; secret: string } | null {
  return agentTokenIn(request.headers);
}

/** `agentToken` of request headers already read. */
function agentTokenIn(headers: IncomingHttpHeaders): { accessKeyId: string; secret: string } | null {
  const { authorization, 'x-auth-token': xAuthToken } = headers;
  let token: string | undefined;
  // The scheme is case-insensitive (RFC 9110 §11.1): `bearer` and `BEARER` are Bearer too.
  if (authorization && /^bearer /i.test(authorization)) token = authorization.slice(7).trim();
  else if (typeof xAuthToken === 'string') token = xAuthToken;
  if (!token) return null;
  const colon = token.indexOf(':');
  if (colon <= 0) return { accessKeyId: '', secret: token };
  return { accessKeyId: token.slice(0, colon), secret: token.slice(colon + 1) };
}

/** Authentication shared by the route families. */
export class Authenticator {
  constructor(
    private readonly adminToken: string,
    private readonly servers: ServerService,
    private readonly secrets: SecretDeriver,
  ) {}

  /** Resolves the caller: the operator's admin token, or an agent's credential. */
  async principal(request: FastifyRequest): Promise<Principal> {
    const caller = this.caller(request.headers);
    if ('kind' in caller) return caller;
    const identity =
      this.servers.cachedIdentity(caller.accessKeyId) ?? (await this.servers.authenticate(caller.accessKeyId, caller.secret, secretsEqual));
    if (!identity) throw new HearthError('ERR_AUTH_INVALID');
    return this.agent(identity, caller.secret);
  }

  /**
   * `principal` without a promise, for hot paths: the same answer and the same errors for the
   * request's headers, or undefined when the caller is an agent whose credential is not cached yet
   * (then call `principal`).
   */
  principalNow(headers: IncomingHttpHeaders): Principal | undefined {
    const caller = this.caller(headers);
    if ('kind' in caller) return caller;
    const cached = this.servers.cachedIdentity(caller.accessKeyId);
    return cached && this.agent(cached, caller.secret);
  }

  /**
   * `principalNow` for a reply answered before fastify: the agent whose credential is cached and
   * matches, or undefined for anything else (the operator, an error); it never throws. When it says
   * undefined, fastify's route answers, and refuses what is wrong with its coded error.
   */
  cachedAgent(headers: IncomingHttpHeaders): Extract<Principal, { kind: 'agent' }> | undefined {
    try {
      const principal = this.principalNow(headers);
      return principal?.kind === 'agent' ? principal : undefined;
    } catch {
      return undefined;
    }
  }

  /** The operator, or the agent token still to verify; throws when the request carries neither. */
  private caller(headers: IncomingHttpHeaders): Principal | { accessKeyId: string; secret: string } {
    const operatorToken = headers['x-auth-token'];
    if (typeof operatorToken === 'string') {
      if (secretsEqual(operatorToken, this.adminToken)) return { kind: 'operator' };
      if (!operatorToken.includes(':')) throw new HearthError('ERR_AUTH_INVALID');
    }
    const token = agentTokenIn(headers);
    if (!token) throw new HearthError('ERR_AUTH_MISSING');
    if (!token.accessKeyId) {
      if (secretsEqual(token.secret, this.adminToken)) return { kind: 'operator' };
      throw new HearthError('ERR_AUTH_INVALID');
    }
    return token;
  }

  /** A known agent, once its secret matches (constant-time) the one cached with its identity. */
  private agent(identity: AgentIdentity, secret: string): Extract<Principal, { kind: 'agent' }> {
    if (!secretsEqual(secret, identity.secret)) throw new HearthError('ERR_AUTH_INVALID');
    this.servers.touch(identity.serverId);
    return { kind: 'agent', serverId: identity.serverId, projectId: identity.projectId, accessKeyId: identity.accessKeyId };
  }

  /**
   * A capability for one deployment's signal URL (`?token=`, and `&action=` naming the derived config
   * of the action it was issued for, `&key=` the access key it is bound to), or null when none was
   * given. Its key (none, or the one given) is checked against the deployment's where the signal is
   * written: its server's delete changes it (see domain/server-deployments.ts).
   */
  capability(deploymentId: string, token: string | undefined, action?: string, key?: string): Principal | null {
    if (token === undefined) return null;
    if (key !== undefined && action === undefined) throw new HearthError('ERR_AUTH_INVALID');
    const subject = action === undefined ? deploymentId : signalTokenSubject(deploymentId, action, key ?? null);
    if (!secretsEqual(token, this.secrets.deploymentSignalToken(subject))) throw new HearthError('ERR_AUTH_INVALID');
    return action === undefined
      ? { kind: 'capability', deploymentId, key: null }
      : { kind: 'capability', deploymentId, action, key: key ?? null };
  }
}
