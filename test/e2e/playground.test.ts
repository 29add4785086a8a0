// The playground in real Chromium against the real stack (LiveKit, a worker on the offline profile, the control
// plane serving the page): sign in with an API key, pick the agent, talk (Chromium's fake microphone plays a
// spoken question), watch the transcript and the per-turn latency table fill, stop, and read the call record.
// Along the way: the key never reaches storage or another origin, and axe finds no serious violation.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsoleMessage, Request, WebSocket } from 'playwright-core';
import type { TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { answerFromWords, startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { launchBrowser, speechWav, type TestBrowser } from '../support/browser.ts';
import { buildPlayground } from '../../web/build-playground.ts';
import { axeViolations } from '../support/page-check.ts';

const FIRST_MESSAGE = 'Hello, thank you for calling Acme Dental.';
const ANSWER = 'We open at nine in the morning.';

let stack: TestStack;
let llm: FakeOpenAI;
let dist: string;
let key: string;
let agentId: string;
let browser: TestBrowser;
let mic: { file: string; remove(): void } | undefined;
const fixture = stackFixture();

beforeAll(async () => {
  // The page as built from this checkout, so the test never runs against a stale web/dist.
  dist = mkdtempSync(path.join(os.tmpdir(), 'vap-playground-e2e-'));
  await buildPlayground(dist);
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    if (String(req.messages[0]?.content ?? '').startsWith('You analyse phone and web calls')) {
      return { text: JSON.stringify({ summary: 'The caller asked when the practice opens.', outcome: 'question_answered' }) };
    }
    return answerFromWords([{ words: ['open', 'opening', 'time', 'morning', 'tomorrow'], text: ANSWER }], 'Please hold while I transfer your call.')(req);
  });
  ({ stack, key } = await fixture.start({
    org: 'playground',
    worker: true,
    env: { WEB_DIST_DIR: dist, SSRF_ALLOWLIST: '127.0.0.1,localhost', WORKER_SILENCE_SECONDS: '15', DISPATCH_TIMEOUT_SECONDS: '30', REAP_DELAY_SECONDS: '1' },
  }));
  const modelId = await createStandInModel(fixture.api, llm.url, { system_prompt: 'You are the receptionist of Acme Dental.' });
  agentId = await createLocalAgent(fixture.api, {
    name: 'Receptionist',
    llm_id: modelId,
    tts: { provider: 'local', model: 'espeak-ng', voice_id: 'en-us' },
    first_message: FIRST_MESSAGE,
    enable_recording: true,
  });
  // The question (4 s of silence first), then a long silence before Chromium loops the file: unmuted after the
  // greeting, the microphone plays the question within one loop.
  mic = await speechWav('What time do you open tomorrow morning?', { trailSilenceMs: 20_000 });
  browser = await launchBrowser({ audioFile: mic.file });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  mic?.remove();
  await fixture.stop();
  await llm?.close();
  if (dist) rmSync(dist, { recursive: true, force: true });
});

describe('the playground', () => {
  it('signs in, talks to the agent, shows transcript and per-turn latency, then the completed call record', async () => {
    const origin = new URL(stack.controlPlaneUrl!).origin;
    const page = await browser.newPage();
    // A phone's width: the page must work there.
    await page.setViewportSize({ width: 390, height: 844 });
    const requests: { url: string; authorization: string | undefined }[] = [];
    const sockets: string[] = [];
    const cspViolations: string[] = [];
    page.on('request', (r: Request) => requests.push({ url: r.url(), authorization: r.headers().authorization }));
    page.on('websocket', (ws: WebSocket) => sockets.push(ws.url()));
    page.on('console', (m: ConsoleMessage) => {
      if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
    });
    try {
      await page.goto(`${stack.controlPlaneUrl}/playground`);
      expect(await axeViolations(page)).toEqual([]);

      // Sign in with the API key; the agent list comes from GET /v1/agents.
      await page.getByLabel('Secret API key or dashboard token').fill(key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('#setup:not([hidden])').waitFor();
      expect(await page.locator('#credential').inputValue()).toBe('');
      await page.getByLabel('Agent', { exact: true }).selectOption(agentId);
      await page.getByRole('button', { name: 'Start call' }).click();
      // Muted while the call connects: the fake microphone plays its question on a fixed schedule, and a question
      // heard while the greeting is being prepared would interrupt it (a busy machine makes that overlap).
      const mute = page.locator('#mute');
      await mute.click();
      expect(await mute.getAttribute('aria-pressed')).toBe('true');

      // The first message; then, unmuted, the spoken question's turn: a row of the latency table with numbers in it.
      await page.locator('#transcript li.agent', { hasText: 'Acme Dental' }).first().waitFor({ timeout: 120_000 });
      await mute.click();
      expect(await mute.getAttribute('aria-pressed')).toBe('false');
      await page.locator('#transcript li.user').first().waitFor({ timeout: 120_000 });
      await page.locator('#transcript li.agent', { hasText: 'nine in the morning' }).first().waitFor({ timeout: 120_000 });
      // The question's turn is the row with an end-of-utterance figure (the greeting's has none). A locator, not
      // waitForFunction: the page's policy forbids the eval that the latter needs.
      const number = /^\d+$/;
      const questionRow = page.locator('#metrics-body tr', { has: page.locator('td:nth-of-type(1)', { hasText: number }) }).first();
      await questionRow.waitFor({ timeout: 120_000 });
      const [eou, llmTtft] = await questionRow.locator('td').allTextContents();
      expect([eou, llmTtft]).toEqual([expect.stringMatching(number), expect.stringMatching(number)]);
      // The greeting's turn, first, with the figure it has: its audio's first byte, though made before the call started.
      const greetingRow = page.locator('#metrics-body tr').first();
      expect(await greetingRow.locator('th').textContent()).toBe('1');
      expect((await greetingRow.locator('td').allTextContents())[2]).toMatch(number);
      expect(await page.locator('#chart circle').count()).toBeGreaterThan(0);
      expect(['listening', 'thinking', 'speaking']).toContain(await page.locator('#state').textContent());
      expect(await axeViolations(page)).toEqual([]);

      // Stop, then the record: completed, with the conversation.
      const callId = (await page.locator('#call-id').textContent())!.match(/[0-9a-f-]{36}/)![0];
      await page.getByRole('button', { name: 'Stop call' }).click();
      await page.locator('#record:not([hidden])').waitFor();
      await page.locator('#record-status', { hasText: 'completed' }).waitFor({ timeout: 60_000 });
      await page.locator('#record-transcript li.agent', { hasText: 'Acme Dental' }).first().waitFor({ timeout: 60_000 });
      expect(await page.locator('#state').textContent()).toBe('ended');
      const record = (await (await fetch(`${origin}/v1/calls/${callId}`, { headers: { authorization: `Bearer ${key}` } })).json()) as { status: string; metadata: Record<string, unknown> };
      expect(record.status).toBe('completed');
      expect(record.metadata).toMatchObject({ source: 'playground' });
      expect(await axeViolations(page)).toEqual([]);

      // The key stayed in memory: nothing in storage or cookies, and it went only to this origin.
      const stored = await page.evaluate('({ local: localStorage.length, session: sessionStorage.length, cookie: document.cookie })');
      expect(stored).toEqual({ local: 0, session: 0, cookie: '' });
      expect(await browser.context.cookies()).toEqual([]);
      const withAuth = requests.filter((r) => r.authorization);
      expect(withAuth.length).toBeGreaterThan(0);
      for (const r of withAuth) expect(new URL(r.url).origin, r.url).toBe(origin);
      for (const r of requests) expect(r.url.includes(key), r.url).toBe(false);
      for (const url of [...requests.map((r) => r.url), ...sockets]) {
        const u = new URL(url);
        expect(u.protocol === 'data:' || u.origin === origin || u.hostname === '127.0.0.1', url).toBe(true);
      }
      expect(cspViolations).toEqual([]);
    } finally {
      await page.close();
    }
  }, 400_000);
});
