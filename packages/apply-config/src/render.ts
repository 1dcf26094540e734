// Mustache as os-apply-config renders it (pystache with its JsonRenderer): no HTML escaping,
// missing names render empty, None renders empty, any other non-string renders as json.dumps,
// dotted names resolve their first part on the context stack and the rest in dicts only, and
// Python truthiness decides sections. The parser follows pystache's rules for standalone tags
// (a tag alone on its line, with nothing after it) and delimiter changes.
import { ApplyConfigError } from './errors.ts';
import { isDict, pyJsonDumps, type PyValue } from '@hearth/agent-kit/python-json';
import { pyTruthy } from './py-json.ts';

type Node =
  | string
  | { kind: 'value'; key: string }
  | { kind: 'partial'; key: string }
  | { kind: 'section' | 'inverted'; key: string; nodes: Node[] }
  | { kind: 'nothing' };

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function tagPattern(open: string, close: string): RegExp {
  return new RegExp(
    `([ \\t]*)${escapeRegExp(open)}\\s*(?:(=)\\s*([^\\n]+?)\\s*=|(\\{)\\s*([^\\n]+?)\\s*\\}|([!>&/#^]?)\\s*([\\s\\S]+?))\\s*${escapeRegExp(close)}`,
    'g',
  );
}

const isEndOfLine = (char: string | undefined): boolean => char === '\r' || char === '\n';

/** Parses a template into nodes; throws ApplyConfigError on a mismatched section end. */
export function parseTemplate(template: string): Node[] {
  let pattern = tagPattern('{{', '}}');
  let start = 0;
  let nodes: Node[] = [];
  let sectionKey: string | undefined;
  const open: Array<{ kind: 'section' | 'inverted'; key: string | undefined; outer: Node[]; parentKey: string | undefined }> = [];
  for (;;) {
    pattern.lastIndex = start;
    const match = pattern.exec(template);
    if (!match) break;
    let matchStart = match.index;
    let end = matchStart + match[0].length;
    const [, whitespace = '', change, delims, raw, rawName, type = '', tagKey = ''] = match;
    const tag = change !== undefined ? '=' : raw !== undefined ? '&' : type;
    const key = change !== undefined ? (delims ?? '') : raw !== undefined ? (rawName ?? '') : tagKey;
    const beginsLine = matchStart === 0 || isEndOfLine(template[matchStart - 1]);
    const endsLine = end === template.length || isEndOfLine(template[end]);
    if (beginsLine && endsLine && tag !== '' && tag !== '&') {
      if (template[end] === '\r') end++;
      if (template[end] === '\n') end++;
    } else if (whitespace) {
      matchStart += whitespace.length;
    }
    if (start !== matchStart) nodes.push(template.slice(start, matchStart));
    start = end;
    if (tag === '#' || tag === '^') {
      open.push({ kind: tag === '#' ? 'section' : 'inverted', key, outer: nodes, parentKey: sectionKey });
      sectionKey = key;
      nodes = [];
      continue;
    }
    if (tag === '/') {
      const section = open.pop();
      if (key !== sectionKey || !section) throw new ApplyConfigError(`Section end tag mismatch: ${key} != ${sectionKey ?? 'None'}`);
      section.outer.push({ kind: section.kind, key, nodes });
      nodes = section.outer;
      sectionKey = section.parentKey;
      continue;
    }
    if (tag === '=') {
      const [newOpen, newClose] = key.split(/\s+/).filter(Boolean);
      if (newOpen === undefined || newClose === undefined) throw new ApplyConfigError(`invalid delimiters: ${key}`);
      pattern = tagPattern(newOpen, newClose);
      nodes.push({ kind: 'nothing' });
    } else if (tag === '!') nodes.push({ kind: 'nothing' });
    else if (tag === '>') nodes.push({ kind: 'partial', key });
    else nodes.push({ kind: 'value', key });
  }
  if (start !== template.length) nodes.push(template.slice(start));
  // As pystache: an unclosed section ends the template, and only its own content is kept.
  return nodes;
}

const MISSING = Symbol('missing');

function lookup(stack: readonly PyValue[], name: string): PyValue | typeof MISSING {
  if (name === '.') return stack.length > 0 ? (stack[stack.length - 1] as PyValue) : MISSING;
  const [first = '', ...rest] = name.split('.');
  let result: PyValue | typeof MISSING = MISSING;
  for (let index = stack.length - 1; index >= 0; index--) {
    const item = stack[index] as PyValue;
    if (isDict(item) && item.has(first)) {
      result = item.get(first) as PyValue;
      break;
    }
  }
  for (const part of rest) {
    if (result === MISSING || !isDict(result) || !result.has(part)) return MISSING;
    result = result.get(part) as PyValue;
  }
  return result;
}

function renderNodes(nodes: readonly Node[], stack: PyValue[]): string {
  let out = '';
  for (const node of nodes) {
    if (typeof node === 'string') {
      out += node;
      continue;
    }
    if (node.kind === 'nothing' || node.kind === 'partial') continue;
    const value = lookup(stack, node.key);
    if (node.kind === 'value') {
      if (value === MISSING || value === null) continue;
      out += typeof value === 'string' ? value : pyJsonDumps(value);
    } else if (node.kind === 'inverted') {
      if (value === MISSING || !pyTruthy(value)) out += renderNodes(node.nodes, stack);
    } else if (value !== MISSING && pyTruthy(value)) {
      for (const item of Array.isArray(value) ? value : [value]) {
        stack.push(item);
        out += renderNodes(node.nodes, stack);
        stack.pop();
      }
    }
  }
  return out;
}

/**
 * Renders a mustache template against `view` as os-apply-config does. Partials render empty (the
 * original looks for `<name>.mustache` in its current directory; hearth does not).
 */
export function renderMustache(template: string, view: PyValue): string {
  return renderNodes(parseTemplate(template), [view]);
}
