// Just enough XML to read heat-api-cfn's DescribeStackResource reply: elements, text, CDATA and
// entities. No DTDs; namespace prefixes are kept in names and `xmlns` attributes ignored.

/** One element: its name, its own text (children's text excluded) and its children. */
export interface XmlElement {
  name: string;
  text: string;
  children: XmlElement[];
}

const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (whole, entity: string) => {
    if (entity.startsWith('#x')) return String.fromCodePoint(Number.parseInt(entity.slice(2), 16));
    if (entity.startsWith('#')) return String.fromCodePoint(Number.parseInt(entity.slice(1), 10));
    return ENTITIES[entity] ?? whole;
  });
}

/** Parses a document into its root element; throws an Error saying where it is malformed. */
export function parseXml(source: string): XmlElement {
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  const token =
    /<!\[CDATA\[([\s\S]*?)\]\]>|<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<!DOCTYPE[^>]*>|<\/\s*([^\s>]+)\s*>|<([^\s/>]+)((?:[^>"']|"[^"]*"|'[^']*')*?)(\/?)>|([^<]+)/g;
  for (const match of source.matchAll(token)) {
    const [, cdata, closing, opening, , selfClosing, text] = match;
    const current = stack[stack.length - 1];
    if (cdata !== undefined) {
      if (current) current.text += cdata;
    } else if (closing !== undefined) {
      if (current?.name !== closing) throw new Error(`unexpected </${closing}> at offset ${match.index}`);
      stack.pop();
    } else if (opening !== undefined) {
      const element: XmlElement = { name: opening, text: '', children: [] };
      if (current) current.children.push(element);
      else if (root) throw new Error(`a second root element <${opening}> at offset ${match.index}`);
      else root = element;
      if (selfClosing !== '/') stack.push(element);
    } else if (text !== undefined) {
      if (current) current.text += decodeEntities(text);
      else if (text.trim() !== '') throw new Error(`text outside the root element at offset ${match.index}`);
    }
  }
  if (!root) throw new Error('no root element');
  if (stack.length > 0) throw new Error(`<${stack[stack.length - 1]!.name}> is not closed`);
  return root;
}

/** The first direct child named `name`, as lxml's `find(name)`. */
export function childElement(element: XmlElement | undefined, name: string): XmlElement | undefined {
  return element?.children.find((child) => child.name === name);
}
