import { Type, type Static } from 'typebox';
import { Timestamp } from './common.ts';

/**
 * A stack name as Heat accepts it: starts with a letter, then letters, digits, `_`, `-` and `.`,
 * at most 255 characters. Never contains `/`, so it can sit inside an ARN and a URL path.
 */
export const StackName = Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z][A-Za-z0-9_.-]*$' });

/** A resource name, unique inside its stack. No `/` (Heat's rule), so ARNs stay parseable. */
export const ResourceName = Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_.:-]+$' });

/** POST /v1/{project}/stacks body. A stack here is a namespace for resources; there are no templates. */
export const StackCreate = Type.Object({ stack_name: StackName }, { additionalProperties: false });
export type StackCreate = Static<typeof StackCreate>;

/** A stack as the native API returns it (Heat's keys plus the ARN). */
export const Stack = Type.Object({
  id: Type.String(),
  stack_name: StackName,
  project_id: Type.String(),
  arn: Type.String(),
  stack_status: Type.String(),
  creation_time: Timestamp,
  links: Type.Array(Type.Object({ href: Type.String(), rel: Type.String() })),
});
export type Stack = Static<typeof Stack>;

export { resourceArn, stackArn } from './arn.ts';
