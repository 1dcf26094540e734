// Diagnostic (not run by `npm run bench`): how long the agents' Python-JSON parser takes on a big metadata
// document, and the memory it holds afterwards, against JSON.parse. The document is `count` deployments of a
// ~300 KB script config (newlines and quotes escaped, as real ones are). Usage:
//   node --expose-gc --import tsx test/bench/tools/py-json-parse.ts [deployments=200]
import { parsePyJson } from '../../../packages/agent-kit/src/python-json.ts';

const count = Number(process.argv[2] ?? 200);
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const line = 'echo "hello world from a config line" > /tmp/x; é\n';
const config = line.repeat(Math.ceil(300_000 / line.length));
const deployments = Array.from({ length: count }, (_, i) => ({ id: String(i), config, inputs: [{ name: 'a', value: 1.5 }] }));
const text = JSON.stringify({ deployments });
console.log(`document: ${(text.length / 1e6).toFixed(1)} MB, ${count} deployments`);

const measure = (name: string, parse: (text: string) => unknown): void => {
  gc();
  const heap = process.memoryUsage().heapUsed;
  const started = performance.now();
  const value = parse(text);
  const ms = performance.now() - started;
  gc();
  const held = process.memoryUsage().heapUsed - heap;
  console.log(`${name}: ${ms.toFixed(0)} ms, ${(held / 1e6).toFixed(0)} MB held after a GC (${value === undefined ? '' : 'parsed'})`);
};
measure('JSON.parse', (t) => JSON.parse(t));
measure('parsePyJson', parsePyJson);
