// The console's live view of a call in progress, in real Chromium (fake microphone) against the real stack: LiveKit,
// the control plane serving the console built from this checkout, a media worker, and a real WebRTC caller
// (rtc-node). A person signed in with a dashboard token opens the call's page: the live view, axe, the transcript as
// it is said, Listen (a hidden participant in the room playing both sides), Say (heard by the caller, recorded in
// supervision[]), Whisper, Mute, Take over (the browser's microphone published in the room) and Hand back, an action's
// error shown in words, and End, after which the page is the completed call's. Screenshots go to the temporary folder
// `npm run docs:screenshots` copies from (test/support/screenshots.ts).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SignJWT } from 'jose';
import { RoomServiceClient, TrackSource } from 'livekit-server-sdk';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { answerFromWords, startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { launchBrowser, type TestBrowser } from '../support/browser.ts';
import { disposeRtc, nowMs } from '../support/rtc-client.ts';
import { webCall, type WebCaller } from '../support/web-caller.ts';
import { untilEvery } from '../support/e2e.ts';
import { ANSWER, OTHER_ANSWER } from '../support/dental-phrases.ts';
import { SCREENSHOTS_DIR } from '../support/screenshots.ts';
import { axeViolations as axeViolationsOn, checkPage } from '../support/page-check.ts';
import { buildConsole } from '../../web/build-console.ts';

const JWT_SECRET = 'console-live-secret-0123456789abcdef-0123456789';
/** A sentence the agent never says by itself: on the page, it came from the supervisor's say. */
const SAY = 'Sorry, we are closed on Sundays.';
const WHISPER = 'The caller is a member of the gold plan.';

let stack: TestStack;
let llm: FakeOpenAI;
let dist: string;
let orgId: string;
let agentId: string;
let browser: TestBrowser;
let page: Page;
let rooms: RoomServiceClient;
const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(250, 180_000);
/** Where the test is, in its output (a loaded machine makes every wait long). */
const step = (what: string) => console.log(`[console live e2e] ${new Date().toISOString()} ${what}`);

beforeAll(async () => {
  dist = mkdtempSync(path.join(os.tmpdir(), 'vap-console-live-'));
  await buildConsole(dist);
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    if (String(req.messages[0]?.content ?? '').startsWith('You analyse'))
      return { text: JSON.stringify({ summary: 'A supervised call.', outcome: 'supervised' }) };
    return answerFromWords([{ words: ['open', 'opening', 'time', 'morning', 'tomorrow'], text: ANSWER }], OTHER_ANSWER)(req);
  });
  ({ stack, orgId } = await fixture.start({
    org: 'console-live',
    worker: true,
    env: {
      WEB_DIST_DIR: dist,
      JWT_SECRET,
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      WORKER_SILENCE_SECONDS: '15',
      DISPATCH_TIMEOUT_SECONDS: '90',
      JOB_INIT_TIMEOUT_MS: '60000',
      REAP_DELAY_SECONDS: '1',
    },
  }));
  rooms = new RoomServiceClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
  const modelId = await createStandInModel(api, llm.url, { system_prompt: 'You are the receptionist of Acme Dental. Answer in one short sentence.' });
  // No greeting: the supervisor's say is the first thing the agent says.
  agentId = await createLocalAgent(api, { name: 'Receptionist', llm_id: modelId, first_message: null, silence_timeout_seconds: 600 });
  mkdirSync(SCREENSHOTS_DIR, { recursive: true });
  browser = await launchBrowser({ microphone: 'fake' });
  page = await browser.newPage();
  page.on('pageerror', (e) => console.log('[page error]', e.message));
  await page.setViewportSize({ width: 1280, height: 900 });
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await disposeRtc();
  await fixture.stop();
  await llm?.close();
  if (dist) rmSync(dist, { recursive: true, force: true });
});

const axeViolations = () => axeViolationsOn(page);
const check = (name: string) => checkPage(page, name);

const live = () => page.getByRole('region', { name: 'Live', exact: true });
const supervision = async (callId: string) =>
  (await api('GET', `/v1/calls/${callId}`)).body.supervision as { action: string; actor_type: string; details: Record<string, unknown> }[];
const participants = async (room: string) => rooms.listParticipants(room);

describe("the console's live view of a call in progress", () => {
  it('listens, says, whispers, mutes, takes over and hands back, and ends the call, which then shows completed', async () => {
    const caller: WebCaller = await webCall(api, { agent_id: agentId });
    const { callId } = caller;
    const room = caller.call.room_name as string;
    try {
      await until('the call in progress', async () => (await api('GET', `/v1/calls/${callId}`)).body.status === 'in_progress');
      await until("the caller subscribed to the agent's track", () => caller.heard.identity !== undefined);

      // A dashboard user, not an API key: the console supervises as the person signed in.
      const jwt = await new SignJWT({ org_id: orgId, email: 'lead@example.com' })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('lead@example.com')
        .setExpirationTime(Math.floor(Date.now() / 1000) + 3600)
        .sign(new TextEncoder().encode(JWT_SECRET));
      await page.goto(`${stack.controlPlaneUrl}/console#/calls/${callId}`);
      await page.getByLabel('Secret API key or dashboard token').fill(jwt);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('#view h1', { hasText: `Call ${callId.slice(0, 8)}` }).waitFor();
      await live().waitFor();
      expect(await live().locator('ol.transcript[aria-live="polite"]').count()).toBe(1);
      expect(await axeViolations()).toEqual([]);

      step('live view checked');
      // Listen: a hidden participant joins the room, and the page plays both sides through <audio> elements.
      await live().getByRole('button', { name: 'Listen', exact: true }).click();
      await live().getByRole('button', { name: 'Stop listening' }).waitFor();
      await until('the listener in the room', async () => (await participants(room)).some((p) => p.identity.startsWith('supervisor-')));
      await until('both sides playing', async () => (await page.locator('.live-audio audio').count()) === 2);
      // The caller is not told: it sees the agent only.
      expect([...caller.client.room.remoteParticipants.keys()]).toEqual([caller.heard.identity]);

      step('listening');
      // Say, now: recorded as the user's, heard by the caller, in the live words and then the record's transcript.
      caller.heard.reset();
      await page.getByLabel('Message for the call').fill(SAY);
      await page.getByLabel('Say it now (interrupt the agent)').check();
      await live().getByRole('button', { name: 'Say', exact: true }).click();
      await live().getByRole('status').filter({ hasText: 'Sent: the agent says it.' }).waitFor();
      expect(await page.getByLabel('Message for the call').inputValue()).toBe('');
      const said = (await supervision(callId)).find((s) => s.action === 'say');
      expect(said).toMatchObject({ actor_type: 'user', details: { text: SAY, when: 'now' } });
      await until('the caller heard the say', () => caller.heard.lastSpeechAt !== undefined && nowMs() - caller.heard.lastSpeechAt > 1500);
      // The transcript (from the room, as it is said) has the line once it is final.
      await live().locator('ol.transcript[aria-live] li.agent', { hasText: 'closed on Sundays' }).waitFor();
      await live().getByRole('cell', { name: SAY }).waitFor();
      // The picture in docs/console.md: listening, a line in the transcript, the say in the actions.
      await check('call-live');

      step('said');
      // Whisper: recorded, and nothing for the caller to hear.
      await page.getByLabel('Message for the call').fill(WHISPER);
      await live().getByRole('button', { name: 'Whisper' }).click();
      await live().getByRole('status').filter({ hasText: 'Sent: only the agent' }).waitFor();
      expect((await supervision(callId)).find((s) => s.action === 'whisper')).toMatchObject({ actor_type: 'user', details: { text: WHISPER } });

      step('whispered');
      // Mute and unmute the agent: the button says which the next click does.
      await live().getByRole('button', { name: 'Mute agent' }).click();
      await live().getByRole('button', { name: 'Unmute agent' }).click();
      await live().getByRole('button', { name: 'Mute agent' }).waitFor();
      await until('mute and unmute recorded', async () => (await supervision(callId)).filter((s) => /mute_agent$/.test(s.action)).length === 2);

      step('muted and unmuted');
      // Stop listening: the listener leaves the room and the page plays nothing.
      await live().getByRole('button', { name: 'Stop listening' }).click();
      await live().getByRole('button', { name: 'Listen', exact: true }).waitFor();
      await until('the listener gone', async () => !(await participants(room)).some((p) => p.identity.startsWith('supervisor-')));
      await until('nothing playing', async () => (await page.locator('.live-audio audio').count()) === 0);

      step('stopped listening');
      // Take over: the browser's (fake) microphone is published in the room, and the caller is sent it.
      await live().getByRole('button', { name: 'Take over' }).click();
      await live().getByRole('button', { name: 'Hand back' }).waitFor();
      await live().getByRole('status').filter({ hasText: 'You have the call' }).waitFor();
      const takeover = (await supervision(callId)).find((s) => s.action === 'takeover');
      expect(takeover).toMatchObject({ actor_type: 'user' });
      const person = String(takeover!.details.identity);
      await until('the microphone in the room', async () =>
        (await participants(room)).some((p) => p.identity === person && p.tracks.some((t) => t.source === TrackSource.MICROPHONE)),
      );
      // A second takeover is the API's 409, in words; here shown by asking the API directly (the page's button is Hand back).
      expect((await api('POST', `/v1/calls/${callId}/control`, { action: 'takeover' })).status).toBe(409);
      await until("the caller subscribed to the person's microphone", () =>
        [...(caller.client.room.remoteParticipants.get(person)?.trackPublications.values() ?? [])].some((t) => t.track !== undefined),
      );

      step('taken over');
      // Hand back: the person's participant leaves the room.
      await live().getByRole('button', { name: 'Hand back' }).click();
      await live().getByRole('button', { name: 'Take over' }).waitFor();
      await until('the person gone', async () => !(await participants(room)).some((p) => p.identity === person));
      expect((await supervision(callId)).map((s) => s.action)).toContain('hand_back');

      step('handed back');
      // An action the API refuses shows its message in the alert region: hand back again, with nobody holding the call.
      const refused = await api('POST', `/v1/calls/${callId}/control`, { action: 'hand_back' });
      expect(refused.status).toBe(409);
      await page.getByLabel('Message for the call').fill('x'.repeat(1001));
      await live().getByRole('button', { name: 'Say', exact: true }).click();
      await live().getByRole('alert').filter({ hasText: 'at most 1000 characters' }).waitFor();

      step('refusal shown');
      // End, after a confirmation: the page becomes the completed call's page.
      await live().getByRole('button', { name: 'End call' }).click();
      const dialog = page.getByRole('dialog', { name: 'End this call?' });
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      expect((await api('GET', `/v1/calls/${callId}`)).body.status).toBe('in_progress');
      await live().getByRole('button', { name: 'End call' }).click();
      await dialog.getByRole('button', { name: 'End the call' }).click();
      step('end confirmed');
      await until('the call ended', async () => (await api('GET', `/v1/calls/${callId}`)).body.status === 'completed');
      step('call completed');
      await page.locator('#view dd', { hasText: /^completed$/ }).waitFor({ timeout: 120_000 });
      expect(await live().count()).toBe(0);
      await page.locator('#view h2', { hasText: 'Conversation' }).waitFor();
      const ended = (await api('GET', `/v1/calls/${callId}`)).body;
      expect(ended).toMatchObject({ status: 'completed', end_reason: 'api_stop' });
      expect(ended.supervision.map((s: { action: string }) => s.action)).toEqual([
        'listen',
        'say',
        'whisper',
        'mute_agent',
        'unmute_agent',
        'takeover',
        'hand_back',
        'end',
      ]);
      expect(await axeViolations()).toEqual([]);
    } catch (err) {
      console.log(
        '[console live e2e] failed; the page shows:',
        await page
          .locator('#view')
          .innerText()
          .catch(() => '?'),
      );
      console.log('[console live e2e] the call:', JSON.stringify((await api('GET', `/v1/calls/${callId}`)).body).slice(0, 2000));
      throw err;
    } finally {
      // Bounded: once the call's room is gone, rtc-node's leave can wait on its recorder for good.
      await Promise.race([caller.client.leave().catch(() => undefined), new Promise((r) => setTimeout(r, 30_000))]);
    }
  }, 600_000);
});
