import type { DeploymentAction, ParameterType } from '@hearth/protocol';

// Copies of the few @hearth/protocol values `hearth` needs at run time. Importing them from the
// protocol package would load TypeBox (~700 modules, over a second of start-up under tsx) on every
// command; protocol-values.test.ts checks that each copy equals the protocol's value.

/** Heat's parameter types for config inputs and outputs (protocol PARAMETER_TYPES). */
export const PARAMETER_TYPES: readonly ParameterType[] = ['String', 'Number', 'CommaDelimitedList', 'Json', 'Boolean'];

/** Deployment actions (protocol DEPLOYMENT_ACTIONS). */
export const DEPLOYMENT_ACTIONS: readonly DeploymentAction[] = ['CREATE', 'UPDATE', 'DELETE', 'SUSPEND', 'RESUME'];

/** Largest deployment timeout accepted, in seconds (protocol MAX_DEPLOYMENT_TIMEOUT). */
export const MAX_DEPLOYMENT_TIMEOUT = 7 * 24 * 3600;

/** Pattern of a project id (protocol ProjectId: 1-64 characters). */
export const PROJECT_ID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
