import type { ConfigTransport, DeploymentAction, ParameterType } from '@hearth/protocol';

// Copies of the few @hearth/protocol values `hearth` needs at run time. Importing them from the
// protocol package would load TypeBox (~700 modules, over a second of start-up under tsx) on every
// command; protocol-values.test.ts checks that each copy equals the protocol's value.

/** Heat's parameter types for config inputs and outputs (protocol PARAMETER_TYPES). */
export const PARAMETER_TYPES: readonly ParameterType[] = ['String', 'Number', 'CommaDelimitedList', 'Json', 'Boolean'];

/** Deployment actions (protocol DEPLOYMENT_ACTIONS). */
export const DEPLOYMENT_ACTIONS: readonly DeploymentAction[] = ['CREATE', 'UPDATE', 'DELETE', 'SUSPEND', 'RESUME'];

/** Largest deployment timeout accepted, in seconds (protocol MAX_DEPLOYMENT_TIMEOUT). */
export const MAX_DEPLOYMENT_TIMEOUT = 7 * 24 * 3600;

/** Pattern of a config or deployment id (protocol Uuid: canonical 8-4-4-4-12 hex form). */
export const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Pattern of a project id (protocol ProjectId: 1-64 characters). */
export const PROJECT_ID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/** How a server's agent fetches its metadata (protocol CONFIG_TRANSPORTS). */
export const CONFIG_TRANSPORTS: readonly ConfigTransport[] = ['HEARTH_LONG_POLL', 'POLL_SERVER_CFN', 'POLL_SERVER_HEAT', 'POLL_TEMP_URL'];

/** Pattern of a stack name (protocol StackName: a letter first, 1-255 characters). */
export const STACK_NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_.-]{0,254}$/;

/** Pattern of a resource name, e.g. a wait condition's (protocol ResourceName: 1-255 characters, no `/`). */
export const RESOURCE_NAME_PATTERN = /^[A-Za-z0-9_.:-]{1,255}$/;

/** Smallest and largest wait-condition timeout, in seconds (protocol MIN/MAX_WAIT_CONDITION_TIMEOUT). */
export const MIN_WAIT_CONDITION_TIMEOUT = 1;
export const MAX_WAIT_CONDITION_TIMEOUT = 43200;

/** Most signals a wait condition can wait for (protocol MAX_WAIT_CONDITION_COUNT). */
export const MAX_WAIT_CONDITION_COUNT = 1000;

/** Longest life of wait-condition handle URLs, in seconds (protocol WaitConditionCreate url_expires_in maximum). */
export const MAX_URL_EXPIRES_IN = 10 * 365 * 24 * 3600;

/** Longest config body text, in characters (protocol ConfigBody: a string of at most 4 MiB characters). */
export const MAX_CONFIG_TEXT_LENGTH = 4 * 1024 * 1024;

/** Largest `POST /software_configs` body hearth-server reads, in bytes (server BODY_LIMITS.config). */
export const MAX_CONFIG_REQUEST_BYTES = 5 * 1024 * 1024;
