import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cfnErrorBody, describeStackResourceJson, describeStackResourceXml, escapeXml, type StackResourceDetail } from './xml.ts';

const DETAIL: StackResourceDetail = {
  StackId: 'arn:openstack:heat::tenant1:stacks/mystack/5f1c2a3e-0000-4000-8000-000000000001',
  StackName: 'mystack',
  LogicalResourceId: 'server',
  PhysicalResourceId: 'f00d',
  ResourceType: 'OS::Nova::Server',
  ResourceStatus: 'CREATE_COMPLETE',
  ResourceStatusReason: 'state changed',
  Description: '',
  LastUpdatedTimestamp: '2024-01-01T00:00:00Z',
  Metadata: { deployments: [] },
};

const AWKWARD_METADATA = {
  script: 'if [ "$a" < 3 ] && [ \'$b\' > 4 ]; then echo ]]> </Metadata>; fi\r\n',
  greeting: 'grüße, 日本語, emoji 😀',
  nested: { list: [1, 2.5, true, null, 'x'] },
};

/** Reads the body the way os-collect-config's cfn collector does: find ... /Metadata, json.loads its text (ElementTree). */
function pythonReadsMetadata(xml: string): unknown {
  const script = [
    'import sys, json, xml.etree.ElementTree as ET',
    "root = ET.fromstring(sys.stdin.buffer.read().decode('ascii'))",
    "assert root.tag == 'DescribeStackResourceResponse', root.tag",
    "detail = root.find('DescribeStackResourceResult').find('StackResourceDetail')",
    "print(json.dumps({'metadata': json.loads(root.find('DescribeStackResourceResult/StackResourceDetail/Metadata').text),",
    "  'reason': detail.find('ResourceStatusReason').text, 'type': detail.find('ResourceType').text}))",
  ].join('\n');
  return JSON.parse(execFileSync('python3', ['-c', script], { input: xml, encoding: 'utf8' }));
}

test('DescribeStackResource XML: no declaration, no namespace, fields in heat-api-cfn order', () => {
  assert.equal(
    describeStackResourceXml(DETAIL),
    '<DescribeStackResourceResponse><DescribeStackResourceResult><StackResourceDetail>' +
      '<StackId>arn:openstack:heat::tenant1:stacks/mystack/5f1c2a3e-0000-4000-8000-000000000001</StackId>' +
      '<StackName>mystack</StackName><LogicalResourceId>server</LogicalResourceId><PhysicalResourceId>f00d</PhysicalResourceId>' +
      '<ResourceType>OS::Nova::Server</ResourceType><ResourceStatus>CREATE_COMPLETE</ResourceStatus>' +
      '<ResourceStatusReason>state changed</ResourceStatusReason><Description></Description>' +
      '<LastUpdatedTimestamp>2024-01-01T00:00:00Z</LastUpdatedTimestamp><Metadata>{"deployments":[]}</Metadata>' +
      '</StackResourceDetail></DescribeStackResourceResult></DescribeStackResourceResponse>',
  );
});

test('python (os-collect-config style) reads back metadata with <, &, quotes, CR and non-ASCII (spawns python3)', () => {
  const xml = describeStackResourceXml({ ...DETAIL, ResourceStatusReason: 'a < b & "c"', Metadata: AWKWARD_METADATA });
  assert.match(xml, /^[\x20-\x7e]*$/, 'the body is printable ASCII');
  assert.deepEqual(pythonReadsMetadata(xml), { metadata: AWKWARD_METADATA, reason: 'a < b & "c"', type: 'OS::Nova::Server' });
});

test('a null ResourceStatusReason is written None, as Heat stringifies it', () => {
  assert.match(describeStackResourceXml({ ...DETAIL, ResourceStatusReason: null }), /<ResourceStatusReason>None<\/ResourceStatusReason>/);
  const read = pythonReadsMetadata(describeStackResourceXml({ ...DETAIL, ResourceStatusReason: null })) as { reason: string };
  assert.equal(read.reason, 'None');
});

test('empty metadata (anything Python finds falsy) is <Metadata/>; other scalars are JSON text', () => {
  for (const empty of [null, undefined, {}, [], '', 0, false]) {
    assert.match(
      describeStackResourceXml({ ...DETAIL, Metadata: empty }),
      /<LastUpdatedTimestamp>[^<]*<\/LastUpdatedTimestamp><Metadata\/><\/Stack/,
    );
  }
  assert.match(describeStackResourceXml({ ...DETAIL, Metadata: 'text' }), /<Metadata>"text"<\/Metadata>/);
  assert.match(describeStackResourceXml({ ...DETAIL, Metadata: [0] }), /<Metadata>\[0\]<\/Metadata>/);
});

test('DescribeStackResource JSON: the boto shape, Metadata an object, ASCII only', () => {
  const body = describeStackResourceJson({ ...DETAIL, ResourceStatusReason: null, Metadata: AWKWARD_METADATA });
  assert.match(body, /^[\x20-\x7e]*$/);
  assert.match(body, /gr\\u00fc\\u00dfe/);
  assert.match(body, /\\ud83d\\ude00/);
  assert.deepEqual(JSON.parse(body), {
    DescribeStackResourceResponse: {
      DescribeStackResourceResult: { StackResourceDetail: { ...DETAIL, ResourceStatusReason: null, Metadata: AWKWARD_METADATA } },
    },
  });
  assert.equal(
    JSON.parse(describeStackResourceJson({ ...DETAIL, Metadata: undefined })).DescribeStackResourceResponse.DescribeStackResourceResult
      .StackResourceDetail.Metadata,
    null,
  );
});

test('CFN error bodies, XML and JSON', () => {
  const error = { type: 'Sender', code: 'AccessDenied', message: 'User is not authorized to perform action: <bad & "worse">' } as const;
  assert.equal(
    cfnErrorBody(error, 'xml'),
    '<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>' +
      '<Message>User is not authorized to perform action: &lt;bad &amp; "worse"&gt;</Message></Error></ErrorResponse>',
  );
  assert.deepEqual(JSON.parse(cfnErrorBody(error, 'json')), {
    ErrorResponse: { Error: { Type: 'Sender', Code: 'AccessDenied', Message: error.message } },
  });
  assert.deepEqual(Object.keys(JSON.parse(cfnErrorBody({ ...error, type: 'Server' }, 'json')).ErrorResponse.Error), [
    'Type',
    'Code',
    'Message',
  ]);
});

test('escapeXml: markup characters, CR, non-ASCII and characters XML cannot carry', () => {
  assert.equal(escapeXml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;');
  assert.equal(escapeXml('tab\tnewline\ncr\r'), 'tab\tnewline\ncr&#xD;');
  assert.equal(escapeXml('ü😀'), '&#xFC;&#x1F600;');
  assert.equal(escapeXml('\u0000\u001b\ud800\uffff'), '&#xFFFD;&#xFFFD;&#xFFFD;&#xFFFD;');
  assert.equal(escapeXml('plain text'), 'plain text');
});
