// Click to first agent audio in Chromium, next to the rtc-node figure of the same run (docs/benchmarks.md,
// "Web calls from a browser"):
//   - browser: the playground (served by the control plane) in Debian's Chromium, signed in with the
//     development key; each call is a click on "Start call" until the web SDK's `agent-audio` event (a Web Audio
//     analyser on the agent's track hears the first message). The page marks both moments with
//     performance.mark, so the figure is the page's own clock: getUserMedia, POST /v1/calls/web, the room join,
//     the worker's dispatch and the first message's synthesis are all inside it;
//   - rtc-node: bench:webrtc's room path (bench/support/room-call.ts): POST /v1/calls/web sent -> the first frame
//     of the first message above its speech threshold at a rtc-node client. Same stack, same agent, alternating
//     with the browser calls.
// Providers: espeak-ng TTS (local), pocketsphinx STT (local), the OpenAI-compatible stand-in for the LLM (the
// first message needs no LLM). Chromium's microphone is its fake device playing silence.
// Usage: node bench/browser.ts [calls]   (npm run bench:browser; default 20 calls each; a p95 needs >= 100
// samples and is printed "not claimed" below that)
// First: rtc-client (through room-call) quiets rtc-node's logger, which reads NODE_ENV when it loads.
import { api, devKey, roomCall, type RoomCall } from './support/room-call.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { disposeRtc } from '../test/support/rtc-client.ts';
import { percentile } from '../shared/latency.ts';
import { writeResults } from './support/results.ts';
import type { RunningStack } from '../scripts/stack/supervisor.ts';
import { createBenchAgent, createBenchModel, startBenchStack } from './support/bench-stack.ts';
import { startFakeOpenAI } from '../test/support/fake-openai.ts';
import { writeWav } from '../test/support/speech.ts';
import { launchBrowser, type TestBrowser } from '../test/support/browser.ts';
import { buildPlayground } from '../web/build-playground.ts';
import type { Page } from 'playwright-core';

const CALLS = Number(process.argv[2] ?? 20);
const FIRST_MESSAGE = 'Hello, thank you for calling. How can I help you today?';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface BrowserCall {
  call_id: string;
  /** Click on "Start call" -> the SDK's first agent-audio event, by the page's clock. */
  click_to_audio_ms: number;
}

/** Waits until the call's record says completed, so the next call starts on an idle worker. */
async function untilCompleted(stack: RunningStack, key: string, callId: string): Promise<void> {
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    if ((await api<{ status: string }>(stack, key, 'GET', `/v1/calls/${callId}`)).body?.status === 'completed') return;
    await sleep(200);
  }
  throw new Error(`call ${callId} did not complete`);
}

async function browserCall(page: Page, stack: RunningStack, key: string): Promise<BrowserCall> {
  await page.click('#start');
  // Polled from here: the page's policy forbids the eval that waitForFunction needs (page.evaluate goes through
  // DevTools instead). The figure comes from the page's marks, so the polling interval does not enter it.
  const end = Date.now() + 90_000;
  for (;;) {
    if ((await page.evaluate(`performance.getEntriesByName('vap:first-agent-audio').length`)) as number) break;
    const message = await page.locator('#message').textContent();
    if (message) throw new Error(`the playground reported: ${message}`);
    if (Date.now() > end) throw new Error('no agent audio within 90 s');
    await sleep(50);
  }
  const ms = (await page.evaluate(`performance.getEntriesByName('vap:first-agent-audio')[0].startTime - performance.getEntriesByName('vap:start')[0].startTime`)) as number;
  const callId = (await page.locator('#call-id').textContent())!.match(/[0-9a-f-]{36}/)![0];
  await page.click('#stop');
  await page.locator('#state', { hasText: 'ended' }).waitFor({ timeout: 30_000 });
  await untilCompleted(stack, key, callId);
  return { call_id: callId, click_to_audio_ms: ms };
}

const stats = (xs: number[]) => ({
  n: xs.length,
  p50: xs.length ? +percentile(xs, 50).toFixed(1) : NaN,
  // Fewer than 100 samples: no p95 is claimed.
  p95: xs.length >= 100 ? +percentile(xs, 95).toFixed(1) : NaN,
  min: +Math.min(...xs).toFixed(1),
  max: +Math.max(...xs).toFixed(1),
});

async function main() {
  const started = Date.now();
  const work = mkdtempSync(path.join(os.tmpdir(), 'vap-bench-browser-'));
  const dist = path.join(work, 'dist');
  await buildPlayground(dist);
  // Chromium's fake microphone: silence (without a file it plays a beep that the agent would hear as speech).
  const silence = path.join(work, 'silence.wav');
  writeWav(silence, { samples: new Int16Array(48_000 * 10), sampleRate: 48_000 });
  const llm = await startFakeOpenAI({ ttftMs: 200 });
  llm.setResponder((req) => (req.stream ? { text: 'Sure.' } : { text: JSON.stringify({ summary: 'Benchmark call.', outcome: 'benchmark' }), ttftMs: 0 }));

  let stack: RunningStack | null = null;
  let browser: TestBrowser | null = null;
  const inBrowser: BrowserCall[] = [];
  const rtc: RoomCall[] = [];
  let warm: { browser: number; rtc: number } | null = null;
  let chromiumVersion: string | null = null;
  let failed = true;
  try {
    stack = await startBenchStack({ env: { WEB_DIST_DIR: dist } });
    const key = await devKey(stack);
    const agentId = await createBenchAgent(stack, key, {
      name: 'Bench',
      llm_id: await createBenchModel(stack, key, llm.url),
      transcriber: { provider: 'local' },
      tts: { provider: 'local', model: 'espeak-ng', voice_id: 'en-us' },
      first_message: FIRST_MESSAGE,
      silence_timeout_seconds: 120,
      max_duration_seconds: 600,
    });

    browser = await launchBrowser({ audioFile: silence });
    chromiumVersion = browser.context.browser()?.version() ?? null;
    const page = await browser.newPage();
    await page.goto(`${stack.controlPlaneUrl}/playground`);
    await page.fill('#credential', key);
    await page.click('#signin-button');
    await page.locator('#setup:not([hidden])').waitFor();
    await page.selectOption('#agent', agentId);

    // A warm-up of each path (the first job process, model loads, Chromium's first WebRTC session), not counted.
    process.stderr.write('warm-up\n');
    const wb = await browserCall(page, stack, key);
    const wr = await roomCall(stack, key, agentId, [], 0, 0, { waitForReport: false });
    await untilCompleted(stack, key, wr.call_id);
    warm = { browser: wb.click_to_audio_ms, rtc: wr.first_message_ms };
    // Alternating, so both paths see the same machine.
    for (let c = 0; c < CALLS; c++) {
      process.stderr.write(`call ${c + 1}/${CALLS}\n`);
      inBrowser.push(await browserCall(page, stack, key));
      const r = await roomCall(stack, key, agentId, [], 0, 0, { waitForReport: false });
      await untilCompleted(stack, key, r.call_id);
      rtc.push(r);
    }
    failed = false;
  } finally {
    await browser?.close();
    await stack?.stop();
    if (stack && !failed) rmSync(stack.runDir, { recursive: true, force: true });
    else if (stack) process.stderr.write(`logs kept in ${stack.logDir}\n`);
    await llm.close();
    await disposeRtc();
    rmSync(work, { recursive: true, force: true });
  }

  const b = stats(inBrowser.map((c) => c.click_to_audio_ms));
  const r = stats(rtc.map((c) => c.first_message_ms));
  const result = {
    bench: 'browser',
    wall_seconds: Math.round((Date.now() - started) / 1000),
    calls: CALLS,
    chromium: chromiumVersion,
    providers: { tts: 'local espeak-ng, voice en-us', stt: 'local pocketsphinx', llm: 'OpenAI-compatible stand-in (not on the first message path)' },
    browser_click_to_first_agent_audio: b,
    rtc_node_post_to_first_speech: r,
    browser_minus_rtc_node_p50_ms: +(b.p50 - r.p50).toFixed(1),
    cold_first_call_ms: warm,
    samples: { browser: inBrowser.map((c) => +c.click_to_audio_ms.toFixed(1)), rtc_node: rtc.map((c) => +c.first_message_ms.toFixed(1)) },
  };
  writeResults('browser', result);
  const f = (x: number) => (Number.isNaN(x) ? 'not claimed' : `${x.toFixed(0)} ms`);
  console.log(`
First agent audio, ${CALLS} calls each, same stack and agent, alternating (warm-up call of each not counted)

| Path | p50 | p95 | min | max |
|---|---|---|---|---|
| Chromium: click "Start call" -> SDK agent-audio | ${f(b.p50)} | ${f(b.p95)} | ${f(b.min)} | ${f(b.max)} |
| rtc-node: POST /v1/calls/web -> first speech frame | ${f(r.p50)} | ${f(r.p95)} | ${f(r.min)} | ${f(r.max)} |

Browser minus rtc-node (p50): ${f(result.browser_minus_rtc_node_p50_ms)}. JSON: bench/results/browser.json (${result.wall_seconds} s).`);
}

await main();
process.exit(0);
