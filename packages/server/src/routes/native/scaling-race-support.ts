// What the scaling race tests share: an app without background writers, and a stack with one group
// (and a policy) to race on.
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { ScalingGroup, ScalingPolicy } from '@hearth/protocol';
import { ADMIN, testApp } from '../../test-support.ts';

/** A test app without background writers: their writes would otherwise take the interloper's turn. */
export const raceApp = () => testApp({ background: false });

export const GROUPS = '/v1/default/stacks/web/scaling_groups';
export const POLICIES = '/v1/default/stacks/web/scaling_policies';

/**
 * Stack `web` with group `g`: min 0, max 5 and an actuator on loopback port 9, where nothing listens
 * (the deliverer is stopped anyway), `group` over these; with `policy`, a policy `up` on the group.
 */
export async function raceGroup(
  app: FastifyInstance,
  group: Record<string, unknown> = {},
  policy?: Record<string, unknown>,
): Promise<ScalingPolicy | undefined> {
  const stack = await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
  assert.equal(stack.statusCode, 201, stack.body);
  const created = await app.inject({
    method: 'POST',
    url: GROUPS,
    headers: ADMIN,
    payload: {
      name: 'g',
      min_size: 0,
      max_size: 5,
      actuator: { url: 'http://127.0.0.1:9/actuator', secret: 'actuator-secret-0123' },
      ...group,
    },
  });
  assert.equal(created.statusCode, 201, created.body);
  if (policy === undefined) return undefined;
  const reply = await app.inject({ method: 'POST', url: POLICIES, headers: ADMIN, payload: { name: 'up', group: 'g', ...policy } });
  assert.equal(reply.statusCode, 201, reply.body);
  return reply.json<{ scaling_policy: ScalingPolicy }>().scaling_policy;
}

/** PATCHes group `g`. */
export const patchGroup = (app: FastifyInstance, payload: Record<string, number>) =>
  app.inject({ method: 'PATCH', url: `${GROUPS}/g`, headers: ADMIN, payload });

/** Group `g` as the API shows it. */
export const showGroup = async (app: FastifyInstance) =>
  (await app.inject({ url: `${GROUPS}/g`, headers: ADMIN })).json<{ scaling_group: ScalingGroup }>().scaling_group;
