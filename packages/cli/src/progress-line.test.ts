import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProgressLine } from './progress-line.ts';

/** A sink that records what was written. */
function sink(isTTY: boolean, columns?: number): { isTTY: boolean; columns?: number; text: string; write(text: string): void } {
  return {
    isTTY,
    ...(columns === undefined ? {} : { columns }),
    text: '',
    write(text: string) {
      this.text += text;
    },
  };
}

test('on a terminal the line is rewritten in place only when its text changes', () => {
  const tty = sink(true);
  const line = new ProgressLine(tty);
  line.update('d: IN_PROGRESS, 0 s elapsed', 'IN_PROGRESS', 0);
  line.update('d: IN_PROGRESS, 0 s elapsed', 'IN_PROGRESS', 400);
  line.update('d: IN_PROGRESS, 1 s elapsed', 'IN_PROGRESS', 1000);
  line.finish('d: COMPLETE after 1 s');
  assert.equal(tty.text, '\r\x1b[2Kd: IN_PROGRESS, 0 s elapsed\r\x1b[2Kd: IN_PROGRESS, 1 s elapsed\r\x1b[2Kd: COMPLETE after 1 s\n');
});

test('elsewhere a line is printed on a change of key, else at most once per interval', () => {
  const pipe = sink(false);
  const line = new ProgressLine(pipe, { pipeIntervalMs: 10_000 });
  for (let t = 0; t <= 25_000; t += 1000) line.update(`d: IN_PROGRESS, ${t / 1000} s elapsed`, 'IN_PROGRESS', t);
  line.update('d: FAILED, 25 s elapsed', 'FAILED', 25_100);
  assert.equal(
    pipe.text,
    ['d: IN_PROGRESS, 0 s elapsed', 'd: IN_PROGRESS, 10 s elapsed', 'd: IN_PROGRESS, 20 s elapsed', 'd: FAILED, 25 s elapsed', ''].join(
      '\n',
    ),
  );
});

test('close ends a line left open on a terminal, and does nothing otherwise', () => {
  const tty = sink(true);
  const line = new ProgressLine(tty);
  line.close();
  assert.equal(tty.text, '');
  line.update('x', 'k', 0);
  line.close();
  assert.equal(tty.text, '\r\x1b[2Kx\n');
});

test('the text cannot move the cursor: its control characters are shown escaped', () => {
  const tty = sink(true);
  const line = new ProgressLine(tty);
  line.update('wait condition a\x1b[1Ab: fetching', 'fetching', 0);
  line.finish('done\r\x1b[2K');
  assert.equal(tty.text, '\r\x1b[2Kwait condition a\\x1b[1Ab: fetching\r\x1b[2Kdone\\r\\x1b[2K\n');
});

test('on a terminal the line is cut to its width, so a rewrite never leaves wrapped rows behind; the final line is whole', () => {
  const tty = sink(true, 30);
  const line = new ProgressLine(tty);
  line.update('deployment 01a21d57: hearth-server unreachable (ERR_CONNECTION), retrying, 3 s elapsed', 'retrying', 0);
  line.update('wait condition 日本語日本語日本語日本語: fetching', 'fetching', 1000);
  line.finish('deployment 01a21d57: COMPLETE after 4 s, a line longer than the terminal');
  assert.equal(
    tty.text,
    [
      '\r\x1b[2Kdeployment 01a21d57: hearth-…',
      // 日 takes two columns: one that would end past column 28 (29 with the '…') is left out whole.
      '\r\x1b[2Kwait condition 日本語日本語…',
      '\r\x1b[2Kdeployment 01a21d57: COMPLETE after 4 s, a line longer than the terminal\n',
    ].join(''),
  );
  const pipe = sink(false, 30);
  new ProgressLine(pipe).update('a pipe gets the whole line, however long it is', 'k', 0);
  assert.equal(pipe.text, 'a pipe gets the whole line, however long it is\n');
});
