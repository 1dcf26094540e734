import type { FastifyRequest } from 'fastify';
import { HearthError } from '../domain/errors.ts';
import type { ServerService } from '../domain/servers.ts';
import { secretsEqual, type SecretDeriver } from './secrets.ts';
import type { Principal } from './principal.ts';

/** The agent token from `Authorization: Bearer <ak>:<secret>` or `X-Auth-Token: <ak>:<secret>`. */
export function agentToken(request: FastifyRequest): { accessKeyId: string; secret: string } | null {
  const authorization = request.headers.authorization;
  let token: string | undefined;
  if (authorization?.startsWith('Bearer ')) token = authorization.slice(7).trim();
  else if (typeof request.headers['x-auth-token'] === 'string') token = request.headers['x-auth-token'];
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
    const operatorToken = request.headers['x-auth-token'];
    if (typeof operatorToken === 'string') {
      if (secretsEqual(operatorToken, this.adminToken)) return { kind: 'operator' };
      if (!operatorToken.includes(':')) throw new HearthError('ERR_AUTH_INVALID');
    }
    const token = agentToken(request);
    if (!token) throw new HearthError('ERR_AUTH_MISSING');
    if (!token.accessKeyId) {
      if (secretsEqual(token.secret, this.adminToken)) return { kind: 'operator' };
      throw new HearthError('ERR_AUTH_INVALID');
    }
    const identity = await this.servers.authenticate(token.accessKeyId, token.secret, secretsEqual);
    if (!identity) throw new HearthError('ERR_AUTH_INVALID');
    this.servers.touch(identity.serverId);
    return { kind: 'agent', serverId: identity.serverId, projectId: identity.projectId, accessKeyId: identity.accessKeyId };
  }

  /**
   * A capability for one deployment's signal URL (`?token=`, and `&action=` naming the derived config
   * of the action it was issued for), or null when none was given.
   */
  capability(deploymentId: string, token: string | undefined, action?: string): Principal | null {
    if (token === undefined) return null;
    const subject = action === undefined ? deploymentId : `${deploymentId}/${action}`;
    if (!secretsEqual(token, this.secrets.deploymentSignalToken(subject))) throw new HearthError('ERR_AUTH_INVALID');
    return action === undefined ? { kind: 'capability', deploymentId } : { kind: 'capability', deploymentId, action };
  }
}
