// The console in real Chromium against a real control plane (its own database, the console built from this
// checkout): every page's main path and its error paths (an expired dashboard token, a 422 shown at its field, a
// 404, the network lost in the middle of a list), axe on every page, keyboard-only use and a 360 px screen. The
// run writes each page's screenshot to docs/console/*.png (docs/console.md shows them), so they never go stale.
// One browser and one page for the whole file (the machine has 2 cores).
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsoleMessage, Page } from 'playwright-core';
import { usePlatform, type TestPlatform } from '../support/platform.ts';
import { launchBrowser, type TestBrowser } from '../support/browser.ts';
import { writeWav } from '../support/speech.ts';
import { buildConsole } from '../../web/build-console.ts';

const AXE = path.resolve(import.meta.dirname, '../../node_modules/axe-core/axe.min.js');
const SHOTS = path.resolve(import.meta.dirname, '../../docs/console');
const JWT_SECRET = 'console-test-secret-0123456789abcdef-0123456789';

let tp: TestPlatform;
let dist: string;
let recordings: string;
let browser: TestBrowser;
let page: Page;
let key: string;
let orgId: string;
let agentId: string;
let otherAgentId: string;
let squadId: string;
let callId: string;
let numberId: string;
const cspViolations: string[] = [];

async function post<T = Record<string, unknown>>(p: string, body: unknown): Promise<T> {
  const res = await tp.request('post', p, { key, body });
  if (res.status >= 300) throw new Error(`POST ${p} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as T;
}

/** Waits (bounded) until `check` holds; for conditions outside the page. */
async function until(check: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> {
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
async function axeViolations(): Promise<{ id: string; nodes: string[] }[]> {
  await page.evaluate(`${readFileSync(AXE, 'utf8')}\n;0`);
  return page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) =>
    r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, nodes: v.nodes.map((n) => JSON.stringify(n.target)) })))`);
}

/** axe finds nothing serious, and the page's screenshot goes to docs/console/<name>.png. */
async function check(name: string): Promise<void> {
  expect(await axeViolations(), name).toEqual([]);
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

const heading = (text: string | RegExp) => page.locator('#view h1', { hasText: text });

async function signIn(credential: string): Promise<void> {
  await page.getByLabel('Secret API key or dashboard token').fill(credential);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

async function go(hash: string, title: string | RegExp): Promise<void> {
  // Each test can run after a failed one: sign in again when the console is at sign-in.
  if (await page.locator('#signin:not([hidden])').isVisible()) {
    await signIn(key);
    await page.locator('#app:not([hidden])').waitFor();
  }
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  await heading(title).waitFor();
}

describe('the console', () => {
  it('signs in with a dashboard token; when it expires the console returns to sign-in and an API key carries on', async () => {
    await page.goto(`${tp.url}/console`);
    await page.locator('#signin:not([hidden])').waitFor();
    expect(await axeViolations()).toEqual([]);
    // A token that has already expired is refused at sign-in, in words.
    const expired = await new SignJWT({ org_id: orgId })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('ada@example.com')
      .setExpirationTime(Math.floor(Date.now() / 1000) - 60)
      .sign(new TextEncoder().encode(JWT_SECRET));
    await signIn(expired);
    await page.locator('#signin-message', { hasText: 'expired' }).waitFor();

    const exp = Math.floor(Date.now() / 1000) + 20;
    const jwt = await new SignJWT({ org_id: orgId, email: 'ada@example.com' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('ada@example.com')
      .setExpirationTime(exp)
      .sign(new TextEncoder().encode(JWT_SECRET));
    await signIn(jwt);
    await heading('Overview').waitFor();
    expect(await page.locator('#credential').inputValue()).toBe('');
    await page.locator('#view h2', { hasText: 'calls in the window' }).waitFor();
    await page.locator('.signals a', { hasText: 'calls ended in error' }).waitFor();
    await check('overview');

    // The token expires while the console is open: the next request is a 401, and sign-in comes back.
    await until(() => Date.now() > exp * 1000 + 1500, 'the token to expire');
    await page.locator('#nav').getByRole('link', { name: 'Calls', exact: true }).click();
    await page.locator('#signin:not([hidden])').waitFor();
    await page.locator('#signin-message', { hasText: 'expired' }).waitFor();
    expect(await page.locator('#app').isHidden()).toBe(true);
    // Signing in again (an API key this time) carries on at the page the user was going to.
    await signIn(key);
    await heading('Calls').waitFor();
  }, 120_000);

  it('lists calls with filters and server pages, survives the network dropping mid-list, and shows a call', async () => {
    await go('#/calls', 'Calls');
    await page.locator('.pager', { hasText: '1–25 of 41' }).waitFor();
    await check('calls');

    // The network goes away before the next page: an error in words with a retry, then the page once it is back.
    await page.context().setOffline(true);
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.locator('#call-results .problem', { hasText: 'could not be reached' }).waitFor();
    await page.context().setOffline(false);
    await page.locator('#call-results').getByRole('button', { name: 'Retry' }).click();
    await page.locator('.pager', { hasText: '26–41 of 41' }).waitFor();

    // Filters travel in the address and are applied by the server.
    await page.getByLabel('Status').selectOption('completed');
    await page.getByLabel('Agent').selectOption(agentId);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.locator('.pager', { hasText: '1–1 of 1' }).waitFor();
    expect(page.url()).toContain('status=completed');

    await page.locator('#call-results tbody a').first().click();
    await heading(`Call ${callId.slice(0, 8)}`).waitFor();
    // The transcript with times; a line is a button that seeks the recording to it.
    const line = page.getByRole('button', { name: /Play from 0:07 ?Agent: You are booked/ });
    await line.waitFor();
    await page.locator('audio').waitFor();
    // The player reports where it seeked to (a 'seeked' event), so a seek that did not happen cannot pass.
    await page.evaluate(`window.seeks = []; document.querySelector('audio').addEventListener('seeked', (e) => window.seeks.push(e.target.currentTime))`);
    await line.click();
    await until(async () => ((await page.evaluate('window.seeks')) as number[]).some((t) => t >= 7 && t < 8), 'the player to seek to 0:07', 30_000);
    // Seeked through byte ranges on the recording's own URL, not by downloading it whole into a blob: URL.
    expect(await page.evaluate(`document.querySelector('audio').src`)).toMatch(/\/v1\/recordings\//);
    await page.locator('#view li.playing', { hasText: 'You are booked' }).waitFor();
    // The per-turn waterfall, the latency summary and the tool call.
    await page.locator('table', { hasText: 'Wait for the answer' }).locator('tbody tr').nth(1).waitFor();
    const firstTurn = await page.locator('table', { hasText: 'Wait for the answer' }).locator('tbody tr').first().locator('td').allTextContents();
    // Caller, wait, then the wait's parts from the reply's own figures (EOU, LLM, TTS, end to end), agent.
    expect(firstTurn).toEqual(['2500', '900', '450', '300', '110', '900', '2600']);
    const secondTurn = await page.locator('table', { hasText: 'Wait for the answer' }).locator('tbody tr').nth(1).locator('td').allTextContents();
    expect(secondTurn).toEqual(['1200', '700', '—', '—', '—', '—', '900']);
    // The chart draws the measured parts of the first wait and only the whole wait of the second.
    expect(await page.locator('section[aria-labelledby="call-latency"] svg rect.bar.eou').count()).toBe(1);
    expect(await page.locator('section[aria-labelledby="call-latency"] svg rect.bar.llm').count()).toBe(1);
    expect(await page.locator('section[aria-labelledby="call-latency"] svg rect.bar.tts').count()).toBe(1);
    expect(await page.locator('section[aria-labelledby="call-latency"] svg rect.bar.wait').count()).toBe(2);
    await page.locator('#view table', { hasText: 'book_slot' }).waitFor();
    await page.getByRole('table', { name: /^Latency over the call/ }).filter({ hasText: 'LLM first token' }).waitFor();

    // The outcome: a 422 appears at the field, then a valid label is saved.
    const outcome = page.getByLabel('Outcome', { exact: true });
    await outcome.fill('Booked Appointment!');
    await page.getByRole('button', { name: 'Save outcome' }).click();
    await page.locator('.field:has(#call-outcome) .field-error').waitFor();
    expect(await outcome.getAttribute('aria-invalid')).toBe('true');
    await outcome.fill('appointment_booked');
    await page.getByRole('button', { name: 'Save outcome' }).click();
    await page.locator('.notice', { hasText: 'appointment_booked' }).waitFor();
    expect(await outcome.getAttribute('aria-invalid')).toBeNull();
    const stored = await tp.request('get', `/v1/calls/${callId}`, { key });
    expect(stored.body.outcome).toBe('appointment_booked');
    await page.locator('#call-deliveries').waitFor();
    await check('call');

    // A call that does not exist: a 404 in words.
    await go('#/calls/6f1d2b7e-0000-4000-8000-000000000000', 'Call not found');
    await page.locator('#view .problem', { hasText: 'was not found' }).waitFor();
  }, 120_000);

  it('creates and edits an agent with the form generated from its schema, the 422 at its field, and runs its tests', async () => {
    await go('#/agents', 'Agents');
    await page.locator('#view table', { hasText: 'Night line' }).waitFor();
    await check('agents');
    await page.getByRole('link', { name: 'New agent' }).click();
    await heading('New agent').waitFor();
    // The heading comes first; the form once the page has the API's schema and the organisation's models.
    await page.locator('.agent-form').waitFor();
    // Every field of the API's CreateAgent schema has its control, nested objects included.
    const doc = (await (await fetch(`${tp.url}/openapi.json`)).json()) as { components: { schemas: Record<string, { properties: Record<string, unknown> }> } };
    for (const name of Object.keys(doc.components.schemas.CreateAgent!.properties))
      expect(await page.locator(`.agent-form [data-path="${name}"]`).count(), name).toBe(1);
    expect(await page.locator('[data-path="turn_taking.min_delay_ms"]').count()).toBe(1);

    await page.locator('[data-path="name"]').fill('Booking line');
    await page.getByLabel('LLM ID').selectOption({ label: 'stand-in (gpt-4o-mini)' });
    const maxDuration = page.locator('[data-path="max_duration_seconds"]');
    await maxDuration.fill('5');
    const minDelay = page.locator('[data-path="turn_taking.min_delay_ms"]');
    await page.getByRole('button', { name: 'Create agent' }).click();
    // The server's 422 lands on the field it names, described by its message, and focus goes there.
    await page.locator('.field:has([data-path="max_duration_seconds"]) .field-error').waitFor();
    expect(await maxDuration.getAttribute('aria-invalid')).toBe('true');
    expect(await minDelay.getAttribute('aria-invalid')).toBeNull();
    expect(await page.locator('.field-error').count()).toBe(1);
    await maxDuration.fill('600');
    await page.getByRole('button', { name: 'Create agent' }).click();
    await heading('Booking line').waitFor();
    await page.getByRole('link', { name: 'Talk to it' }).waitFor();

    // Editing sends what changed; a nested field's 422 lands on the nested field.
    await page.locator('[data-path="first_message"]').fill('Hello, Acme Dental bookings.');
    await page.locator('[data-path="turn_taking.min_delay_ms"]').fill('-1');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('.field:has([data-path="turn_taking.min_delay_ms"]) .field-error').waitFor();
    await page.locator('[data-path="turn_taking.min_delay_ms"]').fill('');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.locator('.notice', { hasText: 'Saved.' }).or(heading('Booking line')).first().waitFor();
    await until(async () => {
      const list = await tp.request('get', '/v1/agents?limit=100', { key });
      return (list.body.items as { name: string; first_message: string | null }[]).some(
        (a) => a.name === 'Booking line' && a.first_message === 'Hello, Acme Dental bookings.',
      );
    }, 'the edit to be stored');

    // "Test it" on the agent that has a suite: a run is created and listed.
    await go(`#/agents/${agentId}`, 'Front desk');
    await page.getByRole('button', { name: 'Run Booking' }).click();
    await page.locator('#view table', { hasText: 'Recent test runs' }).locator('tbody tr').first().waitFor();
    const runs = await tp.request('get', `/v1/agents/${agentId}/test-runs`, { key });
    expect(runs.body.total).toBe(1);
    await check('agent');

    // "Talk to it": without a LiveKit server the call cannot start, and the page says so in words.
    await page.getByRole('link', { name: 'Talk to it' }).click();
    await heading('Talk to Front desk').waitFor();
    await check('talk');
    await page.getByRole('button', { name: 'Start call' }).click();
    await page.locator('#view .problem', { hasText: 'The call could not start' }).waitFor();

    await go('#/agents/6f1d2b7e-0000-4000-8000-000000000000', 'Agent not found');
  }, 120_000);

  it('shows a number, saves its routing and fallback, refuses a bad search at its field, and releases it after a confirmation naming it', async () => {
    await go('#/numbers', 'Phone numbers');
    await page.locator('#view table', { hasText: '+14155550142' }).waitFor();
    // area_code only applies to US and CA: the 422 lands on it.
    await page.getByLabel('Country').fill('GB');
    await page.getByLabel('Area code').fill('415');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.locator('.field:has(#n-area) .field-error').waitFor();
    await page.getByLabel('Country').fill('US');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.locator('#view table', { hasText: 'Available now' }).waitFor();
    await check('numbers');

    await page.getByRole('link', { name: '+14155550142' }).click();
    await heading('+14155550142').waitFor();
    await page.getByLabel('Fallback', { exact: true }).selectOption(otherAgentId);
    await page.getByRole('button', { name: 'Save routing' }).click();
    await page.locator('.notice', { hasText: 'Routing saved.' }).waitFor();
    const n = await tp.request('get', `/v1/phone-numbers/${numberId}`, { key });
    expect(n.body.inbound_routing.fallback).toEqual({ agent_id: otherAgentId });
    expect(n.body.inbound_routing).toMatchObject({ agent_id: agentId, squad_id: null });
    await check('number');
    // A squad answers instead: one select lists agents and squads, and the squad replaces the agent.
    await page.getByLabel('Answered by').selectOption(squadId);
    // Saving clears the first save's notice (in the click's submit handler), so the notice awaited is this one's.
    await page.getByRole('button', { name: 'Save routing' }).click();
    await page.locator('.notice', { hasText: 'Routing saved.' }).waitFor();
    const routed = await tp.request('get', `/v1/phone-numbers/${numberId}`, { key });
    expect(routed.body.inbound_routing).toMatchObject({ agent_id: null, squad_id: squadId, fallback: { agent_id: otherAgentId } });
    // The page shows what is stored: the squad is selected when the page is opened again.
    await go('#/numbers', 'Phone numbers');
    await go(`#/numbers/${numberId}`, '+14155550142');
    expect(await page.getByLabel('Answered by').inputValue()).toBe(squadId);

    await page.getByRole('button', { name: 'Release this number' }).click();
    const dialog = page.getByRole('dialog', { name: 'Release +14155550142?' });
    await dialog.waitFor();
    // Cancel keeps it; Escape is a cancel too.
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    expect((await tp.request('get', `/v1/phone-numbers/${numberId}`, { key })).status).toBe(200);
    await page.getByRole('button', { name: 'Release this number' }).click();
    await dialog.getByRole('button', { name: 'Release +14155550142' }).click();
    await heading('Phone numbers').waitFor();
    expect((await tp.request('get', `/v1/phone-numbers/${numberId}`, { key })).status).toBe(404);
    await go(`#/numbers/${numberId}`, 'Number not found');
  }, 120_000);

  it('creates a knowledge base, adds a source and shows its progress, and deletes it', async () => {
    await go('#/knowledge-bases', 'Knowledge bases');
    await page.getByLabel('Name').fill('');
    await page.getByRole('button', { name: 'Create knowledge base' }).click();
    await page.locator('.field:has(#kb-name) .field-error').waitFor();
    await page.getByLabel('Name').fill('Clinic FAQ');
    await page.getByRole('button', { name: 'Create knowledge base' }).click();
    await heading('Clinic FAQ').waitFor();
    await page.getByLabel('Kind').selectOption('text');
    await page.getByLabel('Text', { exact: true }).fill('We open at nine in the morning, Monday to Friday. Cleanings take forty minutes.');
    await page.getByRole('button', { name: 'Add source' }).click();
    await page.locator('.notice', { hasText: 'Source added' }).waitFor();
    await page.locator('#view table', { hasText: 'We open at nine' }).waitFor();
    // Ingestion runs in the control plane's jobs: the row moves to ready (or says in words why not).
    await page.locator('#view table .status', { hasText: /Ready|Failed/ }).waitFor({ timeout: 90_000 });
    await check('knowledge-base');
    // Re-ingest reads the same source again in place: one source, a second job.
    const kbId = page.url().split('#/knowledge-bases/')[1]!;
    const [src] = (await tp.request('get', `/v1/knowledge-bases/${kbId}/sources`, { key })).body.items;
    await page.getByRole('button', { name: /^Re-ingest We open at nine/ }).click();
    await page.locator('.notice', { hasText: /^Reading We open at nine.* again\.$/ }).waitFor();
    for (;;) {
      const jobs = await tp.sql<{ status: string }[]>`select status from knowledge_jobs where source_id = ${src.source_id} order by created_at`;
      expect(jobs.length).toBe(2);
      if (jobs[1]!.status === 'succeeded' || jobs[1]!.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    await page.locator('#view table .status', { hasText: /Ready|Failed/ }).waitFor({ timeout: 90_000 });
    expect((await tp.request('get', `/v1/knowledge-bases/${kbId}/sources`, { key })).body.items.map((s: { source_id: string }) => s.source_id)).toEqual([src.source_id]);
    await page.getByRole('button', { name: /^Delete We open at nine/ }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete source' }).click();
    await page.locator('#view table td.empty').waitFor();
    await go('#/knowledge-bases', 'Knowledge bases');
    await page.locator('#view table', { hasText: 'Clinic FAQ' }).waitFor();
  }, 150_000);

  it('adds a webhook (secret shown once), tests, pauses, resumes and rotates it, and shows deliveries with request and response', async () => {
    await go('#/webhooks', 'Webhooks');
    await page.getByLabel('Name').fill('CRM');
    await page.getByLabel('URL').fill('not a url');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.locator('.field:has(#w-url) .field-error').waitFor();
    await page.getByLabel('URL').fill('https://hooks.example.com/vap');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.locator('output.secret', { hasText: /^whsec_/ }).waitFor();
    await page.getByRole('button', { name: 'Done, I copied it' }).click();
    await heading('CRM').waitFor();
    await page.getByRole('button', { name: 'Send a test' }).click();
    await page.locator('.notice', { hasText: 'Test sent' }).waitFor();
    await page
      .locator('#view table', { hasText: 'webhook.test' })
      .or(page.locator('#view table', { hasText: 'test' }))
      .first()
      .waitFor();
    await page.locator('#view details summary', { hasText: 'Request and response' }).first().click();
    await page.locator('#view details[open] dd', { hasText: 'https://hooks.example.com/vap' }).waitFor();
    await check('webhook');
    await page.getByRole('button', { name: 'Pause deliveries' }).click();
    await page.getByRole('button', { name: 'Resume deliveries' }).waitFor();
    const w = await tp.request('get', '/v1/webhooks', { key });
    expect(w.body.items[0].status).toBe('inactive');
    await page.getByRole('button', { name: 'Resume deliveries' }).click();
    await page.getByRole('button', { name: 'Pause deliveries' }).waitFor();
    await page.getByRole('button', { name: 'Rotate the secret' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
    await page.locator('output.secret', { hasText: /^whsec_/ }).waitFor();
    await go('#/webhooks', 'Webhooks');
    await page.locator('#view table', { hasText: 'hooks.example.com' }).waitFor();
    await check('webhooks');
  }, 120_000);

  it('creates an API key shown once and revokes it, lists publishable keys and masked integrations, and shows limits read-only', async () => {
    await go('#/settings', 'Settings');
    await page.getByLabel('Name').first().fill('Reporting');
    await page.getByRole('button', { name: 'Create API key' }).click();
    const secret = page.locator('output.secret');
    await secret.waitFor();
    const newKey = (await secret.textContent())!;
    expect(newKey).toMatch(/^vap_sk_/);
    expect((await tp.request('get', '/v1/agents', { key: newKey })).status).toBe(200);
    await page.getByRole('button', { name: 'Done, I copied it' }).click();
    await page.locator('#view table', { hasText: 'Reporting' }).waitFor();
    // The key is not shown again.
    expect(await page.locator('#view').textContent()).not.toContain(newKey);
    await page.getByRole('button', { name: 'Revoke Reporting' }).click();
    await page.getByRole('dialog', { name: 'Revoke Reporting?' }).getByRole('button', { name: 'Revoke Reporting' }).click();
    // The row goes, and nothing else on the page is rebuilt: a form being filled in keeps what it holds.
    await page.getByLabel('Name').nth(1).fill('Website');
    await page.getByRole('status').filter({ hasText: 'The API key "Reporting" is revoked.' }).waitFor();
    await page.getByRole('row', { name: /Reporting/ }).waitFor({ state: 'detached' });
    expect(await page.getByLabel('Name').nth(1).inputValue()).toBe('Website');
    await until(async () => (await tp.request('get', '/v1/agents', { key: newKey })).status === 401, 'the revoked key to be refused');

    await page.getByLabel('Allowed origins').fill('https://www.example.com');
    await page.getByRole('button', { name: 'Create publishable key' }).click();
    await page.locator('#view table', { hasText: 'https://www.example.com' }).waitFor();
    // A publishable key's revocation shows in its row, as the list shows it.
    await page.getByRole('button', { name: 'Revoke Website' }).click();
    await page.getByRole('dialog', { name: 'Revoke Website?' }).getByRole('button', { name: 'Revoke Website' }).click();
    await page.getByRole('row', { name: /Website.*revoked/ }).waitFor();
    expect(await page.getByRole('button', { name: 'Revoke Website' }).count()).toBe(0);
    // Its button went: focus is on the page's heading, not lost (above, it stayed in the field being typed into).
    await until(async () => (await page.evaluate('document.activeElement && document.activeElement.tagName')) === 'H1', 'focus on the heading');
    await page
      .locator('#view table code', { hasText: /…|\.\.\./ })
      .first()
      .waitFor();
    expect(await page.locator('#view').textContent()).not.toContain('sk-console-0123456789abcdefWXYZ');
    await page.locator('#view dt', { hasText: 'max calls per day' }).waitFor();
    expect(await page.locator('#view input[data-path*="max_calls"]').count()).toBe(0);
    await check('settings');
  }, 120_000);

  it('works by keyboard alone and at 360 px wide, with no horizontal scrolling, and never stores the credential', async () => {
    await page.setViewportSize({ width: 360, height: 780 });
    await go('#/overview', 'Overview');
    // From the top of the page: the skip link, then the navigation; Enter follows a link and focus lands on the new page's heading.
    await page.locator('body').focus();
    await page.evaluate('document.activeElement && document.activeElement.blur()');
    let reached = false;
    for (let i = 0; i < 15 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = (await page.evaluate('document.activeElement && document.activeElement.textContent')) === 'Calls';
    }
    expect(reached).toBe(true);
    await page.keyboard.press('Enter');
    await heading('Calls').waitFor();
    await until(async () => (await page.evaluate('document.activeElement && document.activeElement.tagName')) === 'H1', 'focus on the heading');
    // Into the list by keyboard: Tab to the first call's link and open it.
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      if (String(await page.evaluate('document.activeElement && document.activeElement.getAttribute("href")')).startsWith('#/calls/')) break;
    }
    await page.keyboard.press('Enter');
    await heading(/^Call /).waitFor();
    for (const [hash, title, shot] of [
      ['#/overview', 'Overview', 'overview-360'],
      ['#/calls', 'Calls', 'calls-360'],
      [`#/calls/${callId}`, /^Call /, 'call-360'],
      [`#/agents/${agentId}`, 'Front desk', 'agent-360'],
      ['#/numbers', 'Phone numbers', null],
      ['#/knowledge-bases', 'Knowledge bases', null],
      ['#/webhooks', 'Webhooks', null],
      ['#/settings', 'Settings', null],
    ] as const) {
      await go(hash, title);
      await page.locator('#view section, #view table, #view form').first().waitFor();
      const overflow = await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth');
      expect(overflow, hash).toBeLessThanOrEqual(0);
      if (shot) await check(shot);
      else expect(await axeViolations(), hash).toEqual([]);
    }
    const stored = await page.evaluate('({ local: localStorage.length, session: sessionStorage.length, cookie: document.cookie })');
    expect(stored).toEqual({ local: 0, session: 0, cookie: '' });
    expect(await browser.context.cookies()).toEqual([]);
    expect(cspViolations).toEqual([]);
  }, 180_000);
});
