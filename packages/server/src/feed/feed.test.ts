import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ANY_TOPIC, createLocalFeed, waitForChange } from './feed.ts';

test('subscribeAll hears every topic; wakeAll wakes every listener with ANY_TOPIC', async () => {
  const feed = createLocalFeed();
  const all: string[] = [];
  const one: string[] = [];
  const stopAll = feed.subscribeAll((topic) => all.push(topic));
  feed.subscribe('deployment:a', (topic) => one.push(topic));
  feed.publish(['deployment:a', 'server:b', 'deployment:a']);
  assert.deepEqual(all, ['deployment:a', 'server:b'], 'each topic once per publish');
  assert.deepEqual(one, ['deployment:a']);

  const waiting = waitForChange(feed, ['server:never-published'], 5000);
  feed.wakeAll();
  assert.equal(await waiting, true, 'a waiter on a quiet topic re-checks after wakeAll');
  assert.deepEqual(one, ['deployment:a', ANY_TOPIC]);
  assert.equal(all.at(-1), ANY_TOPIC);

  stopAll();
  feed.publish(['server:c']);
  assert.ok(!all.includes('server:c'), 'stopped listening');
  feed.close();
  assert.equal(feed.listenerCount(), 0);
});
