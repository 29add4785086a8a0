// The console test's fixture (console.test.ts): a real control plane with the console built from this checkout, an
// org with an agent, a squad, a call with its recording and a number, one Chromium page, and the steps the tests take
// (sign in, go to a page, check a page with axe and take its screenshot). Importing this module registers the hooks
// that build and close them in the importing test file; the exported bindings are live.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import type { ConsoleMessage, Page } from 'playwright-core';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { launchBrowser, type TestBrowser } from '../support/browser.ts';
import { writeWav } from '../support/speech.ts';
import { buildConsole } from '../../web/build-console.ts';
import { SCREENSHOTS_DIR } from '../support/screenshots.ts';
import { axeViolations as axeViolationsOn, checkPage } from '../support/page-check.ts';

export const SHOTS = SCREENSHOTS_DIR;
export const JWT_SECRET = 'console-test-secret-0123456789abcdef-0123456789';

export let tp: TestPlatform;
export let dist: string;
export let recordings: string;
export let browser: TestBrowser;
export let page: Page;
export let key: string;
export let orgId: string;
export let agentId: string;
export let otherAgentId: string;
export let squadId: string;
export let callId: string;
export let numberId: string;
export const cspViolations: string[] = [];

export async function post<T = Record<string, unknown>>(p: string, body: unknown): Promise<T> {
  const res = await tp.request('post', p, { key, body });
  if (res.status >= 300) throw new Error(`POST ${p} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as T;
}

/** Waits (bounded) until `check` holds; for conditions outside the page. */
export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  dist = mkdtempSync(path.join(os.tmpdir(), 'vap-console-e2e-'));
  recordings = mkdtempSync(path.join(os.tmpdir(), 'vap-console-rec-'));
  await buildConsole(dist);
  tp = await usePlatform({ WEB_DIST_DIR: dist, RECORDINGS_DIR: recordings, JWT_SECRET });
  ({ key, orgId } = await tp.createOrg('Acme Dental'));
  const model = await post<{ id: string }>('/v1/models', { name: 'stand-in', model: 'gpt-4o-mini' });
  agentId = (await post<{ id: string }>('/v1/agents', { name: 'Front desk', llm_id: model.id })).id;
  otherAgentId = (await post<{ id: string }>('/v1/agents', { name: 'Night line', llm_id: model.id })).id;
  squadId = (await post<{ id: string }>('/v1/squads', { name: 'Front desk and nights', agent_ids: [agentId, otherAgentId], entry_agent_id: agentId })).id;

  // A call record as a finished call leaves it: created through the API (no LiveKit here, so it fails at once),
  // then given the conversation, times, a tool call, latency and a recording the worker would have reported.
  const created = await tp.request('post', '/v1/calls/web', { key, body: { agent_id: agentId } });
  callId = (created.body.id ?? created.body.call_id) as string;
  expect(callId).toBeTruthy();
  const t0 = Date.parse('2026-11-20T10:00:00Z');
  const at = (s: number) => new Date(t0 + s * 1000).toISOString();
  const messages = [
    {
      role: 'agent',
      content: 'Hello, thank you for calling Acme Dental.',
      started_at: at(0.5),
      ended_at: at(3),
      metrics: { eou_delay_ms: null, llm_ttft_ms: null, tts_ttfb_ms: 140, e2e_ms: null },
    },
    { role: 'user', content: 'Can I book a cleaning for Tuesday?', started_at: at(4), ended_at: at(6.5) },
    { role: 'agent', content: '', tool_call: { name: 'book_slot', arguments: '{"day":"Tuesday"}', output: '{"slot":"10:00"}', is_error: false } },
    {
      role: 'agent',
      content: 'You are booked for Tuesday at ten.',
      started_at: at(7.4),
      ended_at: at(10),
      metrics: { eou_delay_ms: 450, llm_ttft_ms: 300, tts_ttfb_ms: 110, e2e_ms: 900 },
    },
    { role: 'user', content: 'Thank you, goodbye.', started_at: at(11), ended_at: at(12.2) },
    // A reply without turn figures (a worker that did not report them): its wait is drawn whole.
    { role: 'agent', content: 'Goodbye!', started_at: at(12.9), ended_at: at(13.8) },
  ];
  const stat = (p50: number) => ({ avg_ms: p50 + 10, p50_ms: p50, min_ms: p50 - 40, max_ms: p50 + 60, samples: 2 });
  mkdirSync(path.join(recordings, orgId), { recursive: true });
  const rate = 8000;
  const samples = new Int16Array(rate * 15).map((_, i) => Math.round(2000 * Math.sin((2 * Math.PI * 440 * i) / rate)));
  writeWav(path.join(recordings, orgId, `${callId}.wav`), { samples, sampleRate: rate });
  await tp.sql`
    update calls set status = 'completed', started_at = ${new Date(t0)}, ended_at = ${new Date(t0 + 15_000)}, duration_seconds = 15,
      end_reason = 'user_hangup', messages = ${tp.sql.json(messages)}, analysis_status = 'completed', analysis_method = 'agent_model',
      analysis_summary = 'The caller booked a cleaning for Tuesday.', ai_summary = 'The caller booked a cleaning for Tuesday.',
      latency = ${tp.sql.json({ eou_delay: stat(450), llm_ttft: stat(320), tts_ttfb: stat(140), e2e: stat(900) })},
      recording_key = ${`${orgId}/${callId}.wav`}
    where id = ${callId}`;
  // 40 more calls (failed web calls of the other agent), so the list has pages. Generated columns (the
  // transcript's words) are left for the database to fill.
  const columns = (
    await tp.sql<{ column_name: string }[]>`
      select column_name from information_schema.columns
      where table_schema = current_schema() and table_name = 'calls' and is_generated = 'NEVER' order by ordinal_position`
  ).map((r) => r.column_name);
  const list = columns.map((c) => `"${c}"`).join(', ');
  await tp.sql.unsafe(
    `insert into calls (${list})
     select ${list} from (
       select (jsonb_populate_record(null::calls, to_jsonb(c) || jsonb_build_object(
         'id', gen_random_uuid(), 'agent_id', $2::uuid, 'status', 'failed', 'messages', null, 'recording_key', null,
         'room_name', null, 'created_at', c.created_at - make_interval(mins => g)))).*
       from calls c, generate_series(1, 40) g where c.id = $1) copied`,
    [callId, otherAgentId],
  );
  // A number the organisation owns (buying one wires LiveKit SIP trunks, which this test has no server for).
  const [num] = await tp.sql<{ id: string }[]>`
    insert into phone_numbers (org_id, phone_number, provider, agent_id, status, wiring_state, country, friendly_name)
    values (${orgId}, '+14155550142', 'simulated', ${agentId}, 'active', 'wired', 'US', 'Front desk line') returning id`;
  numberId = num!.id;
  const scenario = await post<{ id: string }>('/v1/test-scenarios', { name: 'Books a cleaning', script: [{ say: 'I would like a cleaning on Tuesday.' }] });
  await post('/v1/test-suites', { name: 'Booking', agent_id: agentId, scenario_ids: [scenario.id] });
  await post('/v1/integrations', { name: 'Production OpenAI', provider: 'openai', api_key: 'sk-console-0123456789abcdefWXYZ' });

  mkdirSync(SHOTS, { recursive: true });
  browser = await launchBrowser({ microphone: 'fake' });
  page = await browser.newPage();
  await page.setViewportSize({ width: 1280, height: 900 });
  page.on('console', (m: ConsoleMessage) => {
    if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
  });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  if (dist) rmSync(dist, { recursive: true, force: true });
  if (recordings) rmSync(recordings, { recursive: true, force: true });
});

/** Violations axe rates serious or critical on the page as it is now (axe runs in the page, injected by DevTools). */
export const axeViolations = () => axeViolationsOn(page);

/** axe finds nothing serious, and the page's screenshot goes to SCREENSHOTS_DIR/<name>.png (test/support/screenshots.ts). */
export const check = (name: string) => checkPage(page, name);

export const heading = (text: string | RegExp) => page.locator('#view h1', { hasText: text });

export async function signIn(credential: string): Promise<void> {
  await page.getByLabel('Secret API key or dashboard token').fill(credential);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

export async function go(hash: string, title: string | RegExp): Promise<void> {
  // Each test can run after a failed one: sign in again when the console is at sign-in.
  if (await page.locator('#signin:not([hidden])').isVisible()) {
    await signIn(key);
    await page.locator('#app:not([hidden])').waitFor();
  }
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  await heading(title).waitFor();
}
