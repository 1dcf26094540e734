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

/** One Ajv error, as fastify hands them to its schemaErrorFormatter. */
interface SchemaError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/**
 * fastify's `schemaErrorFormatter`: one readable reason per bad value. Ajv reports a union by every
 * branch it tried, so an unknown `type` read "must be equal to constant" five times, then "must be
 * null" and "must match a schema in anyOf" twice. Here a union of constants says "must be one of
 * …", and a nullable value whose inner value is wrong reports only the inner problem.
 */
export function formatSchemaErrors(errors: readonly SchemaError[], dataVar: string): Error {
  // Per value: the constants its union allows, and the types its union's branches wanted.
  const allowed = new Map<string, unknown[]>();
  const types = new Map<string, string[]>();
  for (const error of errors) {
    if (error.keyword === 'const') allowed.set(error.instancePath, [...(allowed.get(error.instancePath) ?? []), error.params.allowedValue]);
    if (error.keyword === 'type') types.set(error.instancePath, [...(types.get(error.instancePath) ?? []), String(error.params.type)]);
  }
  const unions = new Set(
    errors.filter((error) => error.keyword === 'anyOf' || error.keyword === 'oneOf').map((error) => error.instancePath),
  );
  const deeper = (path: string) => errors.some((error) => error.instancePath.startsWith(`${path}/`));
  const reasons: string[] = [];
  for (const error of errors) {
    const path = error.instancePath;
    const at = `${dataVar}${path}`;
    let reason: string | undefined;
    if (error.keyword === 'anyOf' || error.keyword === 'oneOf') {
      if (allowed.has(path))
        reason = `${at} must be one of ${allowed
          .get(path)!
          .map((value) => JSON.stringify(value))
          .join(', ')}`;
      else if (types.has(path) && !deeper(path)) reason = `${at} must be ${types.get(path)!.join(' or ')}`;
      // Otherwise the inner value's own error says what is wrong.
      else if (!deeper(path)) reason = `${at} ${error.message ?? 'is not valid'}`;
    } else if (unions.has(path) && (error.keyword === 'const' || error.keyword === 'type')) {
      // One branch of a union: said by the union's line.
    } else if (error.keyword === 'additionalProperties') {
      reason = `${at} must not have the property ${JSON.stringify(error.params.additionalProperty)}`;
    } else {
      reason = `${at} ${error.message ?? 'is not valid'}`;
    }
    if (reason !== undefined && !reasons.includes(reason)) reasons.push(reason);
  }
  return new Error(reasons.length > 0 ? reasons.join(', ') : `${dataVar} is not valid`);
}
