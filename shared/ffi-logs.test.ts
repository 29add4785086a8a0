// The media SDK's native logs stay native (ffi-logs.ts): in a fresh process, the FFI's "initializing ffi server"
// record (debug level; RUST_LOG=debug lets env_logger print it) goes to env_logger on stderr with the patch, and
// comes to the loop as an FFI event without it (the control, so the test can fail). Each case waits for the
// record where it must appear, then checks it went nowhere else: a record goes to one of the two, never both.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { FFI_LOGS_RTC_NODE_VERSION, FfiLogsVersionError, assertFfiLogsTarget, installedRtcNodeVersion } from './ffi-logs.ts';

const patch = pathToFileURL(fileURLToPath(new URL('./ffi-logs.ts', import.meta.url))).href;
const RECORD = 'initializing ffi server';

/** A process that starts the FFI (an audio resampler is made through it) and prints each log event it decodes. */
function child(patched: boolean): { proc: ChildProcess; out: () => string; err: () => string } {
  const script = `
    ${patched ? `const { keepFfiLogsNative } = await import(${JSON.stringify(patch)}); if (!keepFfiLogsNative()) throw new Error('not patched');` : ''}
    const { AudioResampler } = await import('@livekit/rtc-node');
    new AudioResampler(48000, 16000);
    globalThis._ffiClientInstance.on('ffi_event', (ev) => {
      if (ev.message.case === 'logs') for (const r of ev.message.value.records) console.log('LOG ' + r.message);
    });
    setInterval(() => {}, 1000);
  `;
  const proc = spawn(process.execPath, ['--input-type=module', '-e', script], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    env: { ...process.env, RUST_LOG: 'debug' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  children.push(proc);
  return { proc, out: () => out, err: () => err };
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

async function until(what: string, ok: () => boolean, proc: ChildProcess): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!ok()) {
    if (proc.exitCode !== null) throw new Error(`the child exited (${proc.exitCode}) before ${what}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the media SDK logs', () => {
  it('is pinned to the rtc-node release it was checked against', () => {
    expect(installedRtcNodeVersion()).toBe(FFI_LOGS_RTC_NODE_VERSION);
    expect(() => assertFfiLogsTarget()).not.toThrow();
    expect(() => assertFfiLogsTarget('0.13.36')).toThrow(FfiLogsVersionError);
  });

  it('with the patch, a record goes to stderr and no log event reaches the loop', { timeout: 60_000 }, async () => {
    const c = child(true);
    await until('the record on stderr', () => c.err().includes(RECORD), c.proc);
    expect(c.out()).not.toContain('LOG ');
  });

  it('without it (the control), the same record comes to the loop as an FFI event, not to stderr', { timeout: 60_000 }, async () => {
    const c = child(false);
    await until('the record as an event', () => c.out().includes(`LOG ${RECORD}`), c.proc);
    expect(c.err()).not.toContain(RECORD);
  });
});
