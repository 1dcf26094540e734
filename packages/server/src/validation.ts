import { Ajv, type Options } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';

const common: Options = { allErrors: false, strict: false, useDefaults: true };

/**
 * Bodies are validated strictly (no type coercion, unknown keys rejected where a schema says so),
 * so a wrong type is a 400, not a silent conversion. Query strings, params and headers arrive as
 * text and are coerced to the schema's types.
 */
export function createValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const strict = new Ajv({ ...common, coerceTypes: false, removeAdditional: false });
  const coercing = new Ajv({ ...common, coerceTypes: 'array', removeAdditional: false });
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema as object);
}
