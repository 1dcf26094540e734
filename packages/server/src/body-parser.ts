import type { FastifyInstance } from 'fastify';
import { HearthError } from './domain/errors.ts';

/**
 * The deepest nesting a JSON body may have. Hearth copies bodies between threads and serialises
 * them again (recursively): a body nested some thousands of levels deep, a few KB long, would
 * overflow the stack there. Real configs, inputs and signals nest a handful of levels.
 */
export const MAX_BODY_DEPTH = 100;

/** String.prototype.isWellFormed (Node 20; TypeScript's lib has it from es2024 on). */
const wellFormed = (text: string): boolean => (text as unknown as { isWellFormed(): boolean }).isWellFormed();

/**
 * Why a parsed body cannot be accepted, or undefined if it can: nested deeper than
 * MAX_BODY_DEPTH, a number JSON.parse turned into ±Infinity (e.g. `1e400`), or a string or key
 * with a lone UTF-16 surrogate (`"\ud800"`), which no store keeps as sent, or a `__proto__` /
 * `constructor.prototype` key. Iterative, so the check itself cannot overflow.
 */
export function bodyProblem(body: unknown): string | undefined {
  const stack: Array<[unknown, number]> = [[body, 0]];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [value, depth] = next;
    if (typeof value === 'string') {
      if (!wellFormed(value)) return 'a string contains a lone UTF-16 surrogate (an unpaired \\ud800–\\udfff escape)';
    } else if (typeof value === 'number') {
      if (!Number.isFinite(value)) return 'a number is too large to represent (it would be stored as null)';
    } else if (value !== null && typeof value === 'object') {
      if (depth >= MAX_BODY_DEPTH) return `the body is nested deeper than ${MAX_BODY_DEPTH} levels`;
      if (Array.isArray(value)) for (const item of value as unknown[]) stack.push([item, depth + 1]);
      else
        for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
          if (!wellFormed(key)) return 'a key contains a lone UTF-16 surrogate (an unpaired \\ud800–\\udfff escape)';
          // What fastify's own JSON parser refuses: keys that can reach a prototype when merged.
          if (
            key === '__proto__' ||
            (key === 'constructor' && item !== null && typeof item === 'object' && Object.hasOwn(item, 'prototype'))
          )
            return `a key is named ${key === '__proto__' ? '__proto__' : 'constructor.prototype'}`;
          stack.push([item, depth + 1]);
        }
    }
  }
  return undefined;
}

/**
 * The reason given for JSON that does not parse: where it broke, never the text around it.
 * V8's messages quote the body, and a body may hold a password (keystone) or a secret output.
 */
export function syntaxReason(error: Error): string {
  const at = /at position (\d+)/.exec(error.message);
  if (at) return `it breaks at character ${at[1]}`;
  if (/end of (JSON )?input/i.test(error.message)) return 'it ends too early';
  return 'it does not parse';
}

type Done = (error: Error | null, body?: unknown) => void;

/**
 * A body's text as JSON: undefined when empty (no body), else the parsed value. Throws a coded
 * HearthError: ERR_REQUEST_BODY_MALFORMED when it does not parse, ERR_REQUEST_INVALID when it
 * parses but `bodyProblem` refuses it.
 */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new HearthError('ERR_REQUEST_BODY_MALFORMED', { reason: syntaxReason(error as Error) });
  }
  const problem = bodyProblem(parsed);
  if (problem) throw new HearthError('ERR_REQUEST_INVALID', { reason: problem });
  return parsed;
}

/**
 * Every JSON body hearth reads is parsed here, whatever its Content-Type says: cfn-signal sends
 * none, curl's `-d` says form-urlencoded and Heat reads `text/plain` as JSON, yet all of them carry
 * JSON. An empty body is no body (the route's schema says whether it needs one). Then
 * `bodyProblem` refuses what parses but cannot be kept as sent. Routes that take another format
 * (the CFN API's form posts) register their own parser in their own scope.
 */
export function installLenientJsonParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done: Done) => {
    try {
      done(null, parseJsonBody(typeof body === 'string' ? body : body.toString('utf8')));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}
