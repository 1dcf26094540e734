import { Ajv } from 'ajv';

const ajv = new Ajv({ allErrors: false, strict: false, coerceTypes: false });

/**
 * A validator for bodies that arrive outside fastify's schema step (CFN and Heat signal bodies,
 * whose shape depends on the resource the URL names): null when valid, else a reason to send back.
 */
export function bodyChecker(schema: object): (value: unknown) => string | null {
  const validate = ajv.compile(schema);
  return (value) => {
    if (validate(value)) return null;
    const error = validate.errors?.[0];
    if (!error) return 'the body does not match the schema';
    const where = error.instancePath === '' ? 'the body' : error.instancePath.slice(1).replaceAll('/', '.');
    if (error.keyword === 'additionalProperties') return `${where} has an unknown key ${String(error.params.additionalProperty)}`;
    if (error.keyword === 'required') return `${where} lacks the key ${String(error.params.missingProperty)}`;
    return `${where} ${error.message ?? 'is not valid'}`;
  };
}
