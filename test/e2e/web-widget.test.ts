// The drop-in widget in real Chromium against the real stack (LiveKit, the control plane, a worker with the
// offline profile): a host page on a localhost origin loads web/dist/vap-widget.js with a publishable key;
// the fake microphone speaks a question made with espeak-ng. Checked: the call starts, the agent's first
// message is heard (the SDK's `agent-audio`), the question is transcribed, a reply arrives, the turn's
// latency shows, stop ends the call and its record is `completed`; the refusals (an origin the key does not
// allow, a revoked key, a denied microphone) start no call and say why; axe finds no serious violation.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsoleMessage, Page } from 'playwright-core';
import type { TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { launchBrowser, servePages, speechWav, type TestBrowser } from '../support/browser.ts';
import { untilEvery } from '../support/e2e.ts';
import { buildWeb } from '../../web/build.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const FIRST_MESSAGE = 'Hello, thank you for calling Acme Dental.';
const ANSWER = 'We open at nine in the morning.';
const QUESTION = 'What time do you open tomorrow morning?';

let stack: TestStack;
let llm: FakeOpenAI;
let key: string;
let agentId: string;
let pages: Awaited<ReturnType<typeof servePages>>;
let question: Awaited<ReturnType<typeof speechWav>>;
const browsers: TestBrowser[] = [];
/** What the host-page server answers, by path (read at each request, so pages can be added later). */
const served: Record<string, string | Buffer> = {};

const fixture = stackFixture();

// Not the shared apiClient (fixture.api): this file reads every non-empty answer as JSON (an empty one as null).
async function api<T = any>(method: string, p: string, body?: unknown) {
  const res = await fetch(stack.controlPlaneUrl + p, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
}

const until = untilEvery(250);

/** A host page with nothing but the widget's script tag. */
function hostPage(attrs: Record<string, string>, src = '/vap-widget.js'): string {
  const data = Object.entries(attrs)
    .map(([k, v]) => `data-${k}="${v}"`)
    .join(' ');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Acme Dental</title><link rel="icon" href="data:,"></head><body><main><h1>Acme Dental</h1><p>Questions? Call us from this page.</p></main>
<script src="${src}" ${data}></script></body></html>`;
}

async function callCount(): Promise<number> {
  return (await api('GET', '/v1/calls?limit=1')).body.total as number;
}

/** Opens `url` in a fresh browser (fake or denied microphone), with the page's console kept for failures. */
async function open(url: string, microphone: 'fake' | 'denied' = 'fake'): Promise<Page> {
  const b = await launchBrowser({ microphone, ...(microphone === 'fake' ? { audioFile: question.file } : {}) });
  browsers.push(b);
  const page = await b.newPage();
  page.on('console', (m: ConsoleMessage) => {
    if (m.type() === 'error' || m.type() === 'warning') console.log(`[page ${m.type()}] ${m.text()} ${m.location().url}`);
  });
  // The widget's events, in the test log (what the call did, when a wait fails).
  await page.addInitScript(`for (const ev of ['state', 'agent-audio', 'transcript', 'metrics', 'error', 'ended'])
    document.addEventListener('vap:' + ev, (e) => console.info('vap:' + ev, JSON.stringify(e.detail)));`);
  page.on('console', (m: ConsoleMessage) => {
    if (m.type() === 'info' && m.text().startsWith('vap:')) console.log(`[widget] ${m.text()}`);
  });
  page.on('pageerror', (e: Error) => console.log(`[page error] ${e.message}`));
  await page.setViewportSize({ width: 360, height: 740 });
  await page.goto(url);
  return page;
}

/** axe-core on the page (the widget's shadow root included): the serious and critical violations. */
async function axeViolations(page: Page): Promise<{ id: string; impact: string; nodes: number }[]> {
  await page.addScriptTag({ path: path.join(ROOT, 'node_modules/axe-core/axe.min.js') });
  return page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) =>
    r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length })))`);
}

beforeAll(async () => {
  await buildWeb();
  // Chromium plays the file from getUserMedia on and loops it. The test mutes the widget until the greeting is out
  // (a question over the greeting would cut it short), then the question comes within one loop of the file.
  question = await speechWav(QUESTION, { engine: 'espeak-ng', leadSilenceMs: 8000, trailSilenceMs: 20_000 });
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    const system = String(req.messages[0]?.content ?? '');
    if (system.startsWith('You analyse phone and web calls')) return { text: JSON.stringify({ summary: 'A question.', outcome: 'question_answered' }) };
    return { text: ANSWER };
  });
  ({ stack, key } = await fixture.start({
    org: 'e2e-widget',
    worker: true,
    // The LLM stand-in is on loopback: allowed as a model host (LLM_PRIVATE_HOSTS, shared/model-egress.ts).
    env: { LLM_PRIVATE_HOSTS: '127.0.0.1', WORKER_SILENCE_SECONDS: '15', DISPATCH_TIMEOUT_SECONDS: '30', REAP_DELAY_SECONDS: '1' },
  }));
  const modelId = await createStandInModel(api, llm.url, { system_prompt: 'Answer in one short sentence.' });
  agentId = await createLocalAgent(api, { name: 'Receptionist', llm_id: modelId, first_message: FIRST_MESSAGE });

  // One server, reachable as two origins: 127.0.0.1 (allowed on the key) and localhost (not allowed).
  served['/vap-widget.js'] = readFileSync(path.join(ROOT, 'web/dist/vap-widget.js'));
  pages = await servePages(served, '127.0.0.1');
}, 240_000);

afterAll(async () => {
  for (const b of browsers) await b.close();
  await pages?.close();
  question?.remove();
  await fixture.stop();
  await llm?.close();
});

async function publishableKey(origins: string[]): Promise<{ id: string; key: string }> {
  const res = await api('POST', '/v1/publishable-keys', { name: 'site', allowed_origins: origins, scopes: ['calls:web'] });
  expect(res.status).toBe(201);
  return { id: res.body.id, key: res.body.key };
}

/**
 * Serves a host page for `pk` at `name` and returns its URL on `origin`. The script comes from the page's own
 * server with `data-api-base`, or, with `fromApi`, from the control plane's /sdk/vap-widget.js, whose origin is
 * then the API base.
 */
function pageFor(name: string, pk: string, origin: string, o: { fromApi?: boolean } = {}): string {
  const attrs: Record<string, string> = { 'publishable-key': pk, 'agent-id': agentId, title: 'Talk to Acme Dental' };
  if (!o.fromApi) attrs['api-base'] = stack.controlPlaneUrl!;
  const html = hostPage(attrs, o.fromApi ? `${stack.controlPlaneUrl!}/sdk/vap-widget.js` : '/vap-widget.js');
  served[`/${name}.html`] = html;
  return `${origin}/${name}.html`;
}

describe('the drop-in widget in Chromium', () => {
  it('calls the agent: greeting heard, question transcribed, reply, latency, stop, completed record', async () => {
    const pk = await publishableKey([pages.origin]);
    const page = await open(pageFor('call', pk.key, pages.origin, { fromApi: true }));
    const widget = page.locator('vap-widget');
    const start = page.getByRole('button', { name: 'Start call' });
    await start.focus();
    await page.keyboard.press('Enter'); // keyboard operable: Enter on the focused button starts the call

    await widget.and(page.locator('[data-call-id]')).waitFor({ timeout: 60_000 });
    const callId = await widget.getAttribute('data-call-id');
    expect(callId).toMatch(/^[0-9a-f-]{36}$/);
    // Muted until the greeting is out: the fake microphone plays its question on a fixed schedule, and a question
    // heard while the greeting is being prepared would interrupt it (a busy machine makes that overlap).
    const mute = page.getByRole('button', { name: 'Mute' });
    await mute.click();
    expect(await mute.getAttribute('aria-pressed')).toBe('true');
    // The first message plays: the SDK's analyser hears the agent's track.
    await page.locator('vap-widget[data-agent-audio]').waitFor({ timeout: 90_000 });
    const log = page.getByRole('log', { name: 'Call transcript' });
    await log.locator('p[data-role=agent][data-final]').first().waitFor({ timeout: 90_000 });
    expect(await log.locator('p[data-role=agent][data-final] .text').first().textContent()).toBe(FIRST_MESSAGE);
    await mute.click();
    expect(await mute.getAttribute('aria-pressed')).toBe('false');
    // The question is transcribed by the worker's STT and shown as the caller's words.
    await log.locator('p[data-role=user][data-final]').first().waitFor({ timeout: 90_000 });
    expect((await log.locator('p[data-role=user][data-final] .text').first().textContent())?.trim().length).toBeGreaterThan(0);
    // The reply arrives, and the turn's latency shows.
    await until('the reply', async () => (await log.locator('p[data-role=agent][data-final] .text').allTextContents()).includes(ANSWER), 90_000);
    await page.locator('vap-widget .latency').filter({ hasText: 'Reply latency' }).waitFor({ timeout: 60_000 });
    expect(await page.locator('vap-widget .latency').textContent()).toMatch(/^Reply latency, turn \d+: \d+ ms/);

    // Fits a 360 px wide phone screen; the mute toggle says whether it is pressed.
    const box = await page.locator('vap-widget .panel').boundingBox();
    expect(box!.x).toBeGreaterThanOrEqual(0);
    expect(box!.x + box!.width).toBeLessThanOrEqual(360);
    await mute.click();
    expect(await mute.getAttribute('aria-pressed')).toBe('true');
    await mute.click();
    expect(await mute.getAttribute('aria-pressed')).toBe('false');

    const violations = await axeViolations(page);
    expect(violations).toEqual([]);

    await page.getByRole('button', { name: 'End call' }).click();
    await page.getByRole('status').filter({ hasText: 'Call ended' }).waitFor({ timeout: 30_000 });
    expect(await widget.getAttribute('data-state')).toBe('ended');
    const record = await until('the completed call', async () => {
      const c = await api('GET', `/v1/calls/${callId}`);
      return c.body.status === 'completed' ? c.body : null;
    });
    expect(record).toMatchObject({ type: 'web', status: 'completed', agent_id: agentId });
    expect(record.messages.some((m: any) => m.role === 'agent' && m.content === ANSWER)).toBe(true);
  }, 300_000);

  it('ends the call when the page goes away (the caller left the room)', async () => {
    const pk = await publishableKey([pages.origin]);
    const page = await open(pageFor('unload', pk.key, pages.origin));
    await page.getByRole('button', { name: 'Start call' }).click();
    await page.locator('vap-widget[data-agent-audio]').waitFor({ timeout: 90_000 });
    const callId = await page.locator('vap-widget').getAttribute('data-call-id');
    await page.goto('about:blank');
    const record = await until('the call to end', async () => {
      const c = await api('GET', `/v1/calls/${callId}`);
      return c.body.status === 'completed' ? c.body : null;
    });
    expect(record.end_reason).toBe('user_hangup');
  }, 180_000);

  it('refuses a page whose origin the key does not allow: the error is shown and no call starts', async () => {
    const pk = await publishableKey([pages.origin]);
    const before = await callCount();
    const other = pages.origin.replace('127.0.0.1', 'localhost');
    const page = await open(pageFor('wrong-origin', pk.key, other));
    await page.getByRole('button', { name: 'Start call' }).click();
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: /not allowed/ }).waitFor({ timeout: 30_000 });
    expect(await alert.getAttribute('data-code')).toBe('origin_not_allowed');
    expect(await callCount()).toBe(before);
  }, 120_000);

  it('refuses a revoked key', async () => {
    const pk = await publishableKey([pages.origin]);
    expect((await api('DELETE', `/v1/publishable-keys/${pk.id}`)).status).toBe(204);
    const before = await callCount();
    const page = await open(pageFor('revoked', pk.key, pages.origin));
    await page.getByRole('button', { name: 'Start call' }).click();
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: /rejected/ }).waitFor({ timeout: 30_000 });
    expect(await alert.getAttribute('data-code')).toBe('key_rejected');
    expect(await callCount()).toBe(before);
  }, 120_000);

  it('says so when the microphone is denied, and starts no call', async () => {
    const pk = await publishableKey([pages.origin]);
    const before = await callCount();
    const page = await open(pageFor('denied', pk.key, pages.origin), 'denied');
    await page.getByRole('button', { name: 'Start call' }).click();
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: /denied/ }).waitFor({ timeout: 30_000 });
    expect(await alert.getAttribute('data-code')).toBe('permission_denied');
    expect(await callCount()).toBe(before);
    expect(await axeViolations(page)).toEqual([]);
  }, 120_000);
});
