/** The agent's log lines: readable text on a terminal (issue 16), pino's JSON with --log-format json or when not a terminal. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createLogger, formatLogLine } from '../src/logger.js';

const AT = new Date(2024, 0, 2, 3, 4, 5, 6).getTime(); // local time: the text format prints the local clock

function sink(isTTY: boolean) {
  const lines: string[] = [];
  return { lines, write: (l: string) => void lines.push(l), isTTY };
}

describe('formatLogLine', () => {
  test('time, level, message, then key=value; plain words bare, other values quoted', () => {
    const line = JSON.stringify({ level: 30, time: AT, component: 'agent', nodeId: 'nod_1', msg: 'registered', gpus: 2, coordinator: 'http://127.0.0.1:7070', labels: { tier: 'gold' }, note: 'two words' });
    assert.equal(formatLogLine(line), '03:04:05.006 INFO  registered nodeId=nod_1 gpus=2 coordinator=http://127.0.0.1:7070 labels={"tier":"gold"} note="two words"\n');
  });

  test('an error shows its message; warn and error levels are named', () => {
    const err = { type: 'Error', message: 'connect ECONNREFUSED 127.0.0.1:7070', stack: 'Error: connect…\n    at x' };
    assert.equal(formatLogLine(JSON.stringify({ level: 50, time: AT, msg: 'heartbeat failed', err })), '03:04:05.006 ERROR heartbeat failed err="connect ECONNREFUSED 127.0.0.1:7070"\n');
    assert.match(formatLogLine(JSON.stringify({ level: 40, time: AT, msg: 'slow' })), /^03:04:05\.006 WARN {2}slow\n$/);
  });

  test('control characters never reach the terminal, in the message, keys or values', () => {
    const out = formatLogLine(JSON.stringify({ level: 30, time: AT, msg: 'job said \u001b[2Jhi\u0085', 'k\u0007': 'v\u009b31m' }));
    // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
    assert.doesNotMatch(out.slice(0, -1), /[\u0000-\u001f\u007f-\u009f]/);
    assert.match(out, /job said \\u001b\[2Jhi\\u0085 k\\u0007="v\\u009b31m"/);
    assert.equal(formatLogLine('not json \u001b[31m'), 'not json \\u001b[31m\n');
  });

  test('colour only when asked: the level alone is coloured', () => {
    assert.equal(formatLogLine(JSON.stringify({ level: 40, time: AT, msg: 'm' }), { color: true }), '03:04:05.006 \u001b[33mWARN \u001b[0m m\n');
  });
});

describe('createLogger formats', () => {
  test('text: readable lines; json: one JSON object a line; auto follows whether the sink is a terminal', () => {
    const text = sink(false);
    createLogger('info', {}, { format: 'text', sink: text, color: false }).info({ attemptId: 'att_1' }, 'attempt started');
    assert.match(text.lines.join(''), /^\d\d:\d\d:\d\d\.\d{3} INFO {2}attempt started attemptId=att_1\n$/);

    const json = sink(true);
    createLogger('info', {}, { format: 'json', sink: json }).info({ attemptId: 'att_1' }, 'attempt started');
    const parsed = JSON.parse(json.lines.join(''));
    assert.equal(parsed.msg, 'attempt started');
    assert.equal(parsed.attemptId, 'att_1');
    assert.equal(parsed.component, 'agent');

    const tty = sink(true);
    createLogger('info', {}, { format: 'auto', sink: tty, color: false }).warn('on a terminal');
    assert.match(tty.lines.join(''), /^\d\d:\d\d:\d\d\.\d{3} WARN {2}on a terminal\n$/);
    const pipe = sink(false);
    createLogger('info', {}, { format: 'auto', sink: pipe }).warn('into a pipe');
    assert.equal(JSON.parse(pipe.lines.join('')).msg, 'into a pipe');
  });

  test('the level still filters in text format', () => {
    const s = sink(true);
    const log = createLogger('warn', {}, { format: 'text', sink: s, color: false });
    log.info('dropped');
    log.child({ nodeId: 'nod_1' }).error({ code: 7 }, 'kept');
    assert.match(s.lines.join(''), /^\S+ ERROR kept nodeId=nod_1 code=7\n$/);
  });
});
