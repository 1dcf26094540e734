import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Services } from '../../services.ts';
import { installOperatorAuth } from './auth.ts';
import { serverRoutes } from './servers.ts';
import { configRoutes } from './configs.ts';
import { deploymentRoutes } from './deployments.ts';
import { eventRoutes } from './events.ts';
import { stackRoutes } from './stacks.ts';
import { alarmRoutes } from './alarms.ts';
import { scalingRoutes } from './scaling.ts';

/** The native API under /v1/{project_id}. */
export const nativeRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  installOperatorAuth(app, services);
  await app.register(serverRoutes, { services });
  await app.register(configRoutes, { services });
  await app.register(deploymentRoutes, { services });
  await app.register(eventRoutes, { services });
  await app.register(stackRoutes, { services });
  await app.register(alarmRoutes, { services });
  await app.register(scalingRoutes, { services });
};
