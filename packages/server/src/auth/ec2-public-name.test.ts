import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Ec2Request } from '@hearth/protocol/signing';
import { publicSigningName, publicUrlVariants } from './ec2-public-name.ts';

const received: Ec2Request = { method: 'GET', host: '127.0.0.1:8000', path: '/v1/', params: {}, headers: {} };
const signedFor = (variants: Ec2Request[]) => variants.map((variant) => `${variant.host} ${variant.path}`);

test('the public signing name is host[:port] as a client writes it from the URL and the decoded path prefix', () => {
  assert.deepEqual(publicSigningName('https://Hearth.Example:443/'), { host: 'hearth.example', pathPrefix: '' });
  assert.deepEqual(publicSigningName('http://hearth.example:8000/a%20b/hearth/'), {
    host: 'hearth.example:8000',
    pathPrefix: '/a b/hearth',
  });
  assert.deepEqual(publicSigningName('http://[2001:db8::5]:8000'), { host: '[2001:db8::5]:8000', pathPrefix: '' });
  assert.equal(publicSigningName('not a url'), null);
});

test('the variants are the public host and the prefixed path, never the request as received twice', () => {
  assert.deepEqual(signedFor(publicUrlVariants(received, { host: 'h', pathPrefix: '' })), ['h /v1/']);
  assert.deepEqual(signedFor(publicUrlVariants(received, { host: '127.0.0.1:8000', pathPrefix: '' })), []);
  assert.deepEqual(signedFor(publicUrlVariants(received, { host: '127.0.0.1:8000', pathPrefix: '/p' })), ['127.0.0.1:8000 /p/v1/']);
  assert.deepEqual(signedFor(publicUrlVariants(received, { host: 'h', pathPrefix: '/p' })), [
    'h /v1/',
    '127.0.0.1:8000 /p/v1/',
    'h /p/v1/',
  ]);
});
