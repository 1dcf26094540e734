// A signal body as hearth-server takes it. The server refuses (400) a whole body for one value nested deeper
// than MAX_SIGNAL_DEPTH, a number past JSON's range (1e400), a `__proto__`/`constructor.prototype` key, or a
// deploy_stdout/deploy_stderr that is not text (Heat took any JSON): the signal is lost and the deployment left
// to time out. heat-config and heat-config-notify both apply these rules, so one place holds them.

/** Deepest nesting hearth-server takes in a signal body (its MAX_BODY_DEPTH): the body is level 0, its values 1. */
export const MAX_SIGNAL_DEPTH = 100;

/** Keys hearth-server takes only as text (or null). */
const TEXT_KEYS = ['deploy_stdout', 'deploy_stderr'];

/** Why hearth-server would refuse the member `key: value` of a signal body, or undefined. Iterative: any depth. */
function refusedBecause(key: string, value: unknown): string | undefined {
  const stack: Array<[string, unknown, number]> = [[key, value, 1]];
  for (let next = stack.pop(); next; next = stack.pop()) {
    const [name, item, depth] = next;
    if (name === '__proto__') return 'it holds a key named __proto__';
    if (typeof item === 'number' && !Number.isFinite(item)) return 'it is or holds a number too large for JSON';
    if (item === null || typeof item !== 'object') continue;
    if (name === 'constructor' && Object.hasOwn(item, 'prototype')) return 'it holds a key named constructor with a prototype key';
    if (depth >= MAX_SIGNAL_DEPTH) return `it is nested deeper than ${MAX_SIGNAL_DEPTH} levels`;
    for (const [childKey, child] of Object.entries(item)) stack.push([Array.isArray(item) ? '' : childKey, child, depth + 1]);
  }
  return undefined;
}

/** A value as JSON text, numbers past JSON's range as `Infinity`; a note by `tool` when even that cannot be written. */
function jsonText(value: unknown, tool: string): string {
  if (typeof value === 'number') return String(value);
  try {
    return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'number' && !Number.isFinite(item) ? String(item) : item));
  } catch {
    return `[${tool}: the value is nested too deep to write as JSON]`;
  }
}

/** `text` ending in a newline (unless empty) followed by `line`. */
function appendLine(text: string, line: string): string {
  return `${text}${text === '' || text.endsWith('\n') ? '' : '\n'}${line}\n`;
}

/**
 * Signal data hearth-server takes whole: a value it would refuse is sent as its JSON text instead (a top-level
 * `__proto__`, which must be an own key of `data` to be seen, is left out), and the end of deploy_stderr says
 * which and why, each line naming `tool`. `changed` lists the keys rewritten or left out; `data` is returned
 * as it is when none was.
 */
export function sendableSignal(
  data: Readonly<Record<string, unknown>>,
  tool: string,
): { data: Record<string, unknown>; changed: string[] } {
  const out: Record<string, unknown> = {};
  const notes: string[] = [];
  const changed: string[] = [];
  for (const [key, value] of Object.entries(data)) {
    const reason =
      refusedBecause(key, value) ?? (TEXT_KEYS.includes(key) && value !== null && typeof value !== 'string' ? 'it is not text' : undefined);
    if (reason === undefined) {
      out[key] = value;
      continue;
    }
    changed.push(key);
    if (key === '__proto__') notes.push(`[${tool}: ${key} was left out of the signal: hearth-server refuses that key]`);
    else {
      out[key] = jsonText(value, tool);
      notes.push(`[${tool}: ${key} was sent as JSON text: ${reason}]`);
    }
  }
  if (changed.length === 0) return { data, changed };
  // deploy_stderr is text by now, or null, or absent.
  out.deploy_stderr = appendLine(typeof out.deploy_stderr === 'string' ? out.deploy_stderr : '', notes.join('\n'));
  return { data: out, changed };
}
