// The console in real Chromium against a real control plane (its own database, the console built from this
// checkout): every page's main path and its error paths (an expired dashboard token, a 422 shown at its field, a
// 404, the network lost in the middle of a list), axe on every page, keyboard-only use and a 360 px screen. The
// run writes each page's screenshot to a temporary folder; `npm run docs:screenshots` copies them to docs/console.
// One browser and one page for the whole file (the machine has 2 cores).
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import {
  JWT_SECRET,
  agentId,
  axeViolations,
  browser,
  callId,
  check,
  cspViolations,
  go,
  heading,
  key,
  numberId,
  orgId,
  otherAgentId,
  page,
  signIn,
  squadId,
  tp,
  until,
} from './console.test-support.ts';

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
    await page
      .getByRole('table', { name: /^Latency over the call/ })
      .filter({ hasText: 'LLM first token' })
      .waitFor();

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
    await page.getByLabel('Language model').selectOption({ label: 'stand-in (gpt-4o-mini)' });
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
    await page.getByRole('button', { name: 'Save and publish' }).click();
    await page.locator('.field:has([data-path="turn_taking.min_delay_ms"]) .field-error').waitFor();
    await page.locator('[data-path="turn_taking.min_delay_ms"]').fill('');
    await page.getByRole('button', { name: 'Save and publish' }).click();
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
    expect((await tp.request('get', `/v1/knowledge-bases/${kbId}/sources`, { key })).body.items.map((s: { source_id: string }) => s.source_id)).toEqual([
      src.source_id,
    ]);
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
