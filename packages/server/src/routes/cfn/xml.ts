/** The resource detail DescribeStackResource answers, with heat-api-cfn's element names in its order. */
export interface StackResourceDetail {
  /** The stack ARN. */
  StackId: string;
  StackName: string;
  LogicalResourceId: string;
  PhysicalResourceId: string;
  ResourceType: string;
  ResourceStatus: string;
  /** `null` is written `None` in XML, as Heat's str() does, and `null` in JSON. */
  ResourceStatusReason: string | null;
  Description: string;
  /** `YYYY-MM-DDTHH:MM:SSZ`. */
  LastUpdatedTimestamp: string;
  /** The resource metadata, written as JSON text inside the XML element. */
  Metadata: unknown;
}

/** A CFN error (reference/server.md §1.5): `Sender` for the caller's fault, `Server` for ours. */
export interface CfnError {
  type: 'Sender' | 'Server';
  /** The AWS error code, e.g. `AccessDenied`, `InvalidParameterValue`, `InternalFailure`. */
  code: string;
  message: string;
}

const DETAIL_FIELDS = [
  'StackId',
  'StackName',
  'LogicalResourceId',
  'PhysicalResourceId',
  'ResourceType',
  'ResourceStatus',
  'ResourceStatusReason',
  'Description',
  'LastUpdatedTimestamp',
] as const;

/**
 * DescribeStackResource as heat-api-cfn's XML serializer writes it (reference/server.md §1.6): no
 * namespace, no declaration; Metadata as JSON text, or `<Metadata/>` when empty (anything Python finds
 * falsy); other values as text, null as `None`. ASCII only, so a client guessing the charset reads it right.
 */
export function describeStackResourceXml(detail: StackResourceDetail): string {
  const fields = DETAIL_FIELDS.map((name) => element(name, detail[name] ?? 'None'));
  const metadata = isPythonFalsy(detail.Metadata) ? '<Metadata/>' : element('Metadata', asciiJson(detail.Metadata));
  return (
    '<DescribeStackResourceResponse><DescribeStackResourceResult><StackResourceDetail>' +
    fields.join('') +
    metadata +
    '</StackResourceDetail></DescribeStackResourceResult></DescribeStackResourceResponse>'
  );
}

/** DescribeStackResource as JSON (`ContentType=JSON`, what boto's cfn-init and cfn-hup ask for): Metadata as an object. */
export function describeStackResourceJson(detail: StackResourceDetail): string {
  const body = { ...detail, Metadata: detail.Metadata ?? null };
  return asciiJson({ DescribeStackResourceResponse: { DescribeStackResourceResult: { StackResourceDetail: body } } });
}

/** A CFN error body: `<ErrorResponse><Error><Type/><Code/><Message/></Error></ErrorResponse>`, or the same as JSON. */
export function cfnErrorBody(error: CfnError, format: 'xml' | 'json'): string {
  if (format === 'json') return asciiJson({ ErrorResponse: { Error: { Type: error.type, Code: error.code, Message: error.message } } });
  return `<ErrorResponse><Error>${element('Type', error.type)}${element('Code', error.code)}${element('Message', error.message)}</Error></ErrorResponse>`;
}

/**
 * Escapes text for XML element content or attribute values: `& < > " '` as entities, CR and every
 * non-ASCII character as a character reference, and characters XML 1.0 cannot carry as U+FFFD.
 */
export function escapeXml(text: string): string {
  return text.replace(/[&<>"'\r]|[^\t\n\x20-\x7e]/gu, escapeChar);
}

/** escapeXml for element content only: quotes stay as they are, as lxml writes them (so JSON text stays readable). */
function escapeXmlText(text: string): string {
  return text.replace(/[&<>\r]|[^\t\n\x20-\x7e]/gu, escapeChar);
}

function escapeChar(char: string): string {
  const named = NAMED_ENTITIES[char];
  if (named !== undefined) return named;
  const code = char.codePointAt(0) ?? 0xfffd;
  const allowed = code === 0x0d || (code >= 0x7f && code <= 0xd7ff) || (code >= 0xe000 && code <= 0xfffd) || code >= 0x10000;
  return `&#x${(allowed ? code : 0xfffd).toString(16).toUpperCase()};`;
}

const NAMED_ENTITIES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' };

function element(name: string, text: string): string {
  return `<${name}>${escapeXmlText(text)}</${name}>`;
}

/** JSON with every non-ASCII character as a `\uXXXX` escape, as Python's json.dumps writes it. */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Heat writes Metadata only `if value:`: None, False, 0, '', [] and {} give an empty element. */
function isPythonFalsy(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === 'object' && Object.keys(value).length === 0;
}
