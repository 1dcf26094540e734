import { Type, type Static } from 'typebox';
import { HeatListLimit, JsonObject, Name, ServerId, Timestamp, Uuid } from './common.ts';
import { ResourceName } from './stack.ts';

/** Deployment actions Heat's resources use; the API takes any action name (see ActionName). */
export const DEPLOYMENT_ACTIONS = ['CREATE', 'UPDATE', 'DELETE', 'SUSPEND', 'RESUME'] as const;
export const DeploymentAction = Type.Union([
  Type.Literal('CREATE'),
  Type.Literal('UPDATE'),
  Type.Literal('DELETE'),
  Type.Literal('SUSPEND'),
  Type.Literal('RESUME'),
]);
export type DeploymentAction = (typeof DEPLOYMENT_ACTIONS)[number];

/** Deployment statuses. */
export const DEPLOYMENT_STATUSES = ['IN_PROGRESS', 'COMPLETE', 'FAILED'] as const;
export const DeploymentStatus = Type.Union([Type.Literal('IN_PROGRESS'), Type.Literal('COMPLETE'), Type.Literal('FAILED')]);
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

/**
 * How the agent reports a deployment's result. HEARTH_SIGNAL: a capability URL on hearth-server
 * (heat-config-notify's CFN_SIGNAL branch can POST to it unchanged). Heat's transports, with
 * exactly Heat's `deploy_*` inputs: CFN_SIGNAL (pre-signed `POST /v1/signal/{arn}`), HEAT_SIGNAL
 * (keystone password of a credential for this deployment only, then the native resource signal),
 * TEMP_URL_SIGNAL (a Swift-style temp URL taking a `PUT`). NO_SIGNAL: COMPLETE as soon as created.
 */
export const SIGNAL_TRANSPORTS = ['HEARTH_SIGNAL', 'CFN_SIGNAL', 'HEAT_SIGNAL', 'TEMP_URL_SIGNAL', 'NO_SIGNAL'] as const;
export const SignalTransport = Type.Union([
  Type.Literal('HEARTH_SIGNAL'),
  Type.Literal('CFN_SIGNAL'),
  Type.Literal('HEAT_SIGNAL'),
  Type.Literal('TEMP_URL_SIGNAL'),
  Type.Literal('NO_SIGNAL'),
]);
export type SignalTransport = (typeof SIGNAL_TRANSPORTS)[number];

/** Default deployment timeout in seconds (Heat's stack_action_timeout). */
export const DEFAULT_DEPLOYMENT_TIMEOUT = 3600;
/** Largest deployment timeout accepted, in seconds (7 days). */
export const MAX_DEPLOYMENT_TIMEOUT = 7 * 24 * 3600;

/**
 * An action name: one of DEPLOYMENT_ACTIONS or a custom one, as Heat takes any string (heatclient's
 * `--action`: "This can be a custom action"); it reaches the hook as `deploy_action`.
 */
const ActionName = Type.String({ minLength: 1, maxLength: 255 });
const Timeout = Type.Integer({ minimum: 1, maximum: MAX_DEPLOYMENT_TIMEOUT });
const Reason = Type.String({ maxLength: 4096 });

/** POST /v1/{project}/software_deployments body (Heat's keys plus hearth's name, timeout, transport). */
export const SoftwareDeploymentCreate = Type.Object(
  {
    config_id: Uuid,
    server_id: ServerId,
    input_values: Type.Optional(Type.Union([JsonObject, Type.Null()])),
    action: Type.Optional(Type.Union([ActionName, Type.Null()])),
    status: Type.Optional(Type.Union([DeploymentStatus, Type.Null()])),
    status_reason: Type.Optional(Type.Union([Reason, Type.Null()])),
    stack_user_project_id: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()])),
    name: Type.Optional(Type.Union([Name, Type.Null()])),
    timeout: Type.Optional(Timeout),
    signal_transport: Type.Optional(SignalTransport),
    /** Stack (name or id) the deployment belongs to, as resource `resource_name` (default: its id). */
    stack: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    resource_name: Type.Optional(ResourceName),
  },
  { additionalProperties: false },
);
export type SoftwareDeploymentCreate = Static<typeof SoftwareDeploymentCreate>;

/** PUT /v1/{project}/software_deployments/{id} body: only non-null keys are applied (Heat). */
export const SoftwareDeploymentUpdate = Type.Object(
  {
    config_id: Type.Optional(Type.Union([Uuid, Type.Null()])),
    input_values: Type.Optional(Type.Union([JsonObject, Type.Null()])),
    output_values: Type.Optional(Type.Union([JsonObject, Type.Null()])),
    // Empty is skipped, as every empty value of an update is (Heat).
    action: Type.Optional(Type.Union([Type.String({ maxLength: 255 }), Type.Null()])),
    status: Type.Optional(Type.Union([DeploymentStatus, Type.Null()])),
    status_reason: Type.Optional(Type.Union([Reason, Type.Null()])),
    timeout: Type.Optional(Type.Union([Timeout, Type.Null()])),
  },
  { additionalProperties: false },
);
export type SoftwareDeploymentUpdate = Static<typeof SoftwareDeploymentUpdate>;

/** A deployment as returned by the native API (Heat's D plus hearth's extra keys). */
export const SoftwareDeployment = Type.Object({
  id: Uuid,
  config_id: Uuid,
  server_id: Type.String(),
  input_values: JsonObject,
  output_values: Type.Union([JsonObject, Type.Null()]),
  action: Type.String(),
  status: Type.String(),
  status_reason: Type.Union([Type.String(), Type.Null()]),
  creation_time: Timestamp,
  updated_time: Type.Optional(Timestamp),
  name: Type.Union([Type.String(), Type.Null()]),
  derived_config_id: Uuid,
  signal_transport: Type.String(),
  timeout: Type.Integer(),
  deadline: Type.Union([Timestamp, Type.Null()]),
  fetched_time: Type.Union([Timestamp, Type.Null()]),
  last_heartbeat_time: Type.Union([Timestamp, Type.Null()]),
});
export type SoftwareDeployment = Static<typeof SoftwareDeployment>;

/** GET /software_deployments query (`limit` as Heat's configs take it: no maximum). */
export const DeploymentListQuery = Type.Object(
  {
    server_id: Type.Optional(ServerId),
    limit: Type.Optional(HeatListLimit),
    marker: Type.Optional(Uuid),
  },
  { additionalProperties: false },
);
export type DeploymentListQuery = Static<typeof DeploymentListQuery>;
