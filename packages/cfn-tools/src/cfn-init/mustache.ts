// Mustache for files' `context`, as AWS cfn-init renders it: pystache's default renderer. Values
// are HTML-escaped (& < > " ' as Python's html.escape) unless written {{{name}}} or {{& name}};
// non-strings print as Python's str() (True, None, 1.5, [1, 'x'], {'k': 1}); missing names print
// nothing; dotted names walk objects; sections iterate lists, enter objects and test truthiness
// (Python's: empty string, list and object are false); partials print nothing. A tag alone on its
// line takes the line with it.

type Node = string | { kind: 'value'; name: string; escape: boolean } | { kind: 'section' | 'inverted'; name: string; nodes: Node[] };

/** Thrown for a template that cannot be parsed (an unclosed or mismatched section). */
export class MustacheError extends Error {
  override readonly name = 'MustacheError';
}

const TAG = /([ \t]*)\{\{(\{\s*([^}]*?)\s*\}|([#^/!>&=]?)\s*([\s\S]*?)\s*)\}\}/g;

function parse(template: string): Node[] {
  const root: Node[] = [];
  const stack: Array<{ name: string; nodes: Node[] }> = [{ name: '', nodes: root }];
  let at = 0;
  TAG.lastIndex = 0;
  for (let match = TAG.exec(template); match !== null; match = TAG.exec(template)) {
    const [whole, indent = '', , tripleName, sigil = '', rawName = ''] = match;
    const kind = tripleName !== undefined ? '&' : sigil;
    const name = tripleName ?? rawName;
    let start = match.index;
    let end = start + whole.length;
    const lineStart = start === 0 || template[start - 1] === '\n';
    const lineEnd = end === template.length || template[end] === '\n' || template.startsWith('\r\n', end);
    if (lineStart && lineEnd && ['#', '^', '/', '!', '>', '='].includes(kind)) {
      end += template.startsWith('\r\n', end) ? 2 : template[end] === '\n' ? 1 : 0;
    } else start += indent.length;
    const current = stack[stack.length - 1]!;
    if (start > at) current.nodes.push(template.slice(at, start));
    at = end;
    TAG.lastIndex = end;
    if (kind === '#' || kind === '^') {
      const nodes: Node[] = [];
      current.nodes.push({ kind: kind === '#' ? 'section' : 'inverted', name, nodes });
      stack.push({ name, nodes });
    } else if (kind === '/') {
      if (stack.length === 1 || current.name !== name)
        throw new MustacheError(`section end {{/${name}}} does not close {{#${current.name}}}`);
      stack.pop();
    } else if (kind === '=') throw new MustacheError(`delimiter changes ({{=${name}=}}) are not supported`);
    else if (kind === '' || kind === '&') current.nodes.push({ kind: 'value', name, escape: kind === '' });
  }
  if (stack.length > 1) throw new MustacheError(`section {{#${stack[stack.length - 1]!.name}}} is never closed`);
  if (at < template.length) root.push(template.slice(at));
  return root;
}

const MISSING = Symbol('missing');

function lookup(stack: readonly unknown[], name: string): unknown {
  if (name === '.') return stack[stack.length - 1];
  const [first = '', ...rest] = name.split('.');
  let value: unknown = MISSING;
  for (let index = stack.length - 1; index >= 0; index--) {
    const item = stack[index];
    if (typeof item === 'object' && item !== null && !Array.isArray(item) && Object.hasOwn(item, first)) {
      value = (item as Record<string, unknown>)[first];
      break;
    }
  }
  for (const part of rest) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, part)) return MISSING;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

function pyRepr(value: unknown): string {
  if (typeof value === 'string') return value.includes("'") && !value.includes('"') ? `"${value}"` : `'${value.replaceAll("'", "\\'")}'`;
  return pyStr(value);
}

/** Python's str() of a JSON value. */
export function pyStr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(', ')}]`;
  if (typeof value === 'object')
    return `{${Object.entries(value)
      .map(([key, item]) => `${pyRepr(key)}: ${pyRepr(item)}`)
      .join(', ')}}`;
  // JSON holds nothing else; a bigint or symbol from a caller prints as JavaScript would.
  return typeof value === 'bigint' ? value.toString() : '';
}

function truthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object' && value !== null) return Object.keys(value).length > 0;
  return value !== MISSING && value !== null && value !== false && value !== 0 && value !== '';
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#x27;' };

function render(nodes: readonly Node[], stack: unknown[]): string {
  let out = '';
  for (const node of nodes) {
    if (typeof node === 'string') {
      out += node;
      continue;
    }
    const value = lookup(stack, node.name);
    if (node.kind === 'value') {
      if (value === MISSING) continue;
      const text = pyStr(value);
      out += node.escape ? text.replace(/[&<>"']/g, (char) => ESCAPES[char]!) : text;
    } else if (node.kind === 'inverted') {
      if (!truthy(value)) out += render(node.nodes, stack);
    } else if (truthy(value)) {
      for (const item of Array.isArray(value) ? (value as unknown[]) : [value]) {
        stack.push(item);
        out += render(node.nodes, stack);
        stack.pop();
      }
    }
  }
  return out;
}

/** Renders `template` against `context` as pystache.render does; throws MustacheError for a malformed template. */
export function renderMustache(template: string, context: unknown): string {
  return render(parse(template), [context]);
}
