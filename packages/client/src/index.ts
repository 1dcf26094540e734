export { createClient, type HearthClient } from './client.ts';
export {
  type ClientOptions,
  type NormalizedClientOptions,
  DEFAULT_PROJECT,
  DEFAULT_RETRY,
  DEFAULT_TIMEOUT_MS,
  tokenProblem,
} from './options.ts';
export {
  HearthApiError,
  HearthConnectionError,
  isHearthClientError,
  CLIENT_ERROR_CODES,
  type ClientErrorCode,
  type ConnectionErrorCode,
  type HearthClientError,
  type RequestTarget,
} from './errors.ts';
export { type CallOptions } from './http.ts';
export { type ServerMethods } from './servers.ts';
export { type StackMethods } from './stacks.ts';
export { type WaitConditionMethods, type WaitConditionPoll, type WaitConditionPollRequest } from './wait-conditions.ts';
export { type ConfigMethods, type PageOptions } from './configs.ts';
export { type DeploymentMethods, type DeploymentListOptions, type VersionedDeployment, MAX_WAIT_SECONDS } from './deployments.ts';
export { type EventMethods } from './events.ts';
export { type MetricMethods } from './metrics.ts';
export { type EventStreamOptions } from './event-stream.ts';
export { type GuestMethods, type MetadataRequest, type MetadataResult, type SignalOptions } from './guest.ts';
export { SseParser, type SseMessage } from './sse-parser.ts';
export { type ScalingMethods } from './scaling.ts';
