// What a collector is: a small object `{ name, collect(ctx) }` whose outcome is data, never a
// crash. "Not configured" and "not available" are expected outcomes, as in the original.
import type { httpRequest, Logger } from '@hearth/agent-kit';
import { isDict, parsePyJson, pyPlainData } from '@hearth/agent-kit/python-json';
import type { Output } from '../explode.ts';
import type { CollectOptions } from '../options.ts';

/** The outcome of one collection. */
export type CollectOutcome =
  /** Fresh data: the outputs in order (the collector's own key first when exploded). */
  | { kind: 'data'; outputs: Output[] }
  /** The source says nothing changed since the last data (ETag 304, older Last-Modified): keep the last data. */
  | { kind: 'unchanged'; reason: string }
  /** The source could not be read this time (the original's SourceNotAvailable: logged as a warning). */
  | { kind: 'unavailable'; reason: string }
  /** The collector lacks settings it needs (the original's SourceNotConfigured: logged at debug). */
  | { kind: 'not-configured'; reason: string };

/** What a collector may use; injected so that tests need no network and no real clock. */
export interface CollectorContext {
  options: CollectOptions;
  log: Logger;
  http: typeof httpRequest;
  /** Aborts in-flight requests when the daemon stops or re-execs. */
  signal?: AbortSignal;
}

/** One collector. Built once per daemon (re-exec builds new ones), so it may remember an ETag. */
export interface Collector {
  readonly name: string;
  collect(ctx: CollectorContext): Promise<CollectOutcome>;
}

/** Shorthands for the outcomes. */
export const unavailable = (reason: string): CollectOutcome => ({ kind: 'unavailable', reason });
export const notConfigured = (reason: string): CollectOutcome => ({ kind: 'not-configured', reason });

/** A group's string option, or undefined when unset or empty (Heat renders a dropped transport's keys as empty strings). */
export function setting(options: CollectOptions, group: string, name: string): string | undefined {
  const value = options.groups[group]?.[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** A group's number option (seconds), with a fallback. */
export function seconds(options: CollectOptions, group: string, name: string, fallback: number): number {
  const value = options.groups[group]?.[name];
  return typeof value === 'number' ? value : fallback;
}

/** A group's repeatable option. */
export function settings(options: CollectOptions, group: string, name: string): string[] | undefined {
  const value = options.groups[group]?.[name];
  return Array.isArray(value) ? value : undefined;
}

/**
 * JSON text as the original's json.loads reads it, as plain data: floats stay PyFloat (`1.0` is cached as `1.0`),
 * integers beyond 2^53 PyBigInt (every digit kept), NaN and Infinity accepted. Throws PyJsonError.
 */
export function parseJson(text: string): unknown {
  return pyPlainData(parsePyJson(text));
}

/** JSON text that must hold an object (see parseJson): the object, or undefined when it holds something else. */
export function parseJsonObject(text: string): Record<string, unknown> | undefined {
  const value = parsePyJson(text);
  return isDict(value) ? (pyPlainData(value) as Record<string, unknown>) : undefined;
}

/** Parses a JSON body into an object (see parseJson), or says why it is not one. */
export function jsonObject(text: string): { ok: true; value: Record<string, unknown> } | { ok: false; reason: string } {
  try {
    const value = parseJsonObject(text);
    if (value === undefined) return { ok: false, reason: 'the body is not a JSON object' };
    return { ok: true, value };
  } catch (error) {
    return { ok: false, reason: `failed to parse as JSON (${(error as Error).message})` };
  }
}
