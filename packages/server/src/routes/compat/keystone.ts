import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../../services.ts';
import { HearthError } from '../../domain/errors.ts';
import { issueToken } from '../../auth/keystone-token.ts';
import { BODY_LIMITS } from '../limits.ts';

/** Keystone tokens of guest credentials last an hour (keystone's default lifetime). */
export const TOKEN_LIFETIME_MS = 3600 * 1000;

const PasswordAuth = Type.Object({
  auth: Type.Object({
    identity: Type.Object({
      methods: Type.Array(Type.String({ maxLength: 32 }), { maxItems: 8 }),
      password: Type.Object({
        user: Type.Object({
          id: Type.Optional(Type.String({ maxLength: 255 })),
          name: Type.Optional(Type.String({ maxLength: 255 })),
          password: Type.String({ maxLength: 255 }),
          domain: Type.Optional(Type.Object({})),
        }),
      }),
    }),
    scope: Type.Optional(
      Type.Object({
        project: Type.Optional(
          Type.Object({ id: Type.Optional(Type.String({ maxLength: 64 })), name: Type.Optional(Type.String({ maxLength: 255 })) }),
        ),
      }),
    ),
  }),
});

/**
 * A keystone v3 shim so that unmodified Heat clients (os-collect-config's heat collector,
 * heat-config-notify's HEAT_SIGNAL) can log in with a guest credential: the user id is the access
 * key and the password its secret. The catalog points orchestration and object-store back here.
 */
export const keystoneRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const base = `${services.publicUrl}/v3`;
  const version = {
    id: 'v3.14',
    status: 'stable',
    updated: '2020-04-07T00:00:00Z',
    links: [{ rel: 'self', href: `${base}/` }],
    'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.identity-v3+json' }],
  };
  app.get('/', { schema: { tags: ['keystone'] } }, async () => ({ version }));

  app.post('/auth/tokens', { bodyLimit: BODY_LIMITS.small, schema: { tags: ['keystone'], body: PasswordAuth } }, async (request, reply) => {
    const { identity, scope } = request.body.auth;
    if (!identity.methods.includes('password')) throw new HearthError('ERR_AUTH_INVALID');
    const userId = identity.password.user.id ?? identity.password.user.name;
    if (!userId) throw new HearthError('ERR_REQUEST_INVALID', { reason: 'auth.identity.password.user needs an id (the access key id)' });
    const holder = await services.guestCredentials.password(userId, identity.password.user.password);
    if (!holder) throw new HearthError('ERR_AUTH_INVALID');
    const scoped = scope?.project?.id ?? scope?.project?.name;
    if (scoped !== undefined && scoped !== holder.projectId)
      throw new HearthError('ERR_AUTH_FORBIDDEN', { reason: `the credential belongs to project ${holder.projectId}` });
    const issued = new Date();
    const expires = new Date(issued.getTime() + TOKEN_LIFETIME_MS);
    const token = issueToken({
      accessKeyId: holder.accessKeyId,
      projectId: holder.projectId,
      expiresAt: expires,
      key: services.secrets.tokenKey(),
    });
    const endpoint = (type: string, url: string) => ({
      id: `hearth-${type}`,
      type,
      name: type === 'orchestration' ? 'heat' : 'swift',
      endpoints: ['public', 'internal', 'admin'].map((iface) => ({
        id: `hearth-${type}-${iface}`,
        interface: iface,
        region: 'RegionOne',
        region_id: 'RegionOne',
        url,
      })),
    });
    const domain = { id: 'default', name: 'Default' };
    return reply
      .code(201)
      .header('x-subject-token', token)
      .send({
        token: {
          methods: ['password'],
          user: { id: holder.accessKeyId, name: holder.accessKeyId, domain, password_expires_at: null },
          project: { id: holder.projectId, name: holder.projectId, domain },
          roles: [{ id: 'heat_stack_user', name: 'heat_stack_user' }],
          catalog: [
            endpoint('orchestration', `${services.publicUrl}/v1/${holder.projectId}`),
            endpoint('object-store', `${services.publicUrl}/v1/swift/v1/AUTH_${holder.projectId}`),
          ],
          issued_at: issued.toISOString(),
          expires_at: expires.toISOString(),
          audit_ids: [],
        },
      });
  });
};
