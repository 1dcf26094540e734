import { configMethods, type ConfigMethods } from './configs.ts';
import { deploymentMethods, type DeploymentMethods } from './deployments.ts';
import { eventMethods, type EventMethods } from './events.ts';
import { guestMethods, type GuestMethods } from './guest.ts';
import { metricMethods, type MetricMethods } from './metrics.ts';
import { scalingMethods, type ScalingMethods } from './scaling.ts';
import { createTransport } from './http.ts';
import { normalizeClientOptions, type ClientOptions, type NormalizedClientOptions } from './options.ts';
import { serverMethods, type ServerMethods } from './servers.ts';
import { stackMethods, type StackMethods } from './stacks.ts';
import { waitConditionMethods, type WaitConditionMethods } from './wait-conditions.ts';

/** A client of hearth-server: every native (operator) and guest (agent) call. */
export interface HearthClient
  extends
    ServerMethods,
    StackMethods,
    WaitConditionMethods,
    ConfigMethods,
    DeploymentMethods,
    EventMethods,
    GuestMethods,
    MetricMethods,
    ScalingMethods {
  /** The options in force, defaults applied. */
  readonly options: NormalizedClientOptions;
}

/**
 * Creates a client. Operator calls send `token` as X-Auth-Token (use the admin token); guest calls
 * send it as `Authorization: Bearer` (use a server's credential token).
 */
export function createClient(options: ClientOptions): HearthClient {
  const transport = createTransport(normalizeClientOptions(options));
  return {
    options: transport.options,
    ...serverMethods(transport),
    ...stackMethods(transport),
    ...waitConditionMethods(transport),
    ...configMethods(transport),
    ...deploymentMethods(transport),
    ...eventMethods(transport),
    ...guestMethods(transport),
    ...metricMethods(transport),
    ...scalingMethods(transport),
  };
}
