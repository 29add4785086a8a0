// The README's ten-minute tour on the real stack (LiveKit, the SIP bridge, the control plane, a media worker), its
// commands run as written (test/support/readme-tour.ts reads them from the README): 1. make an agent on a local
// model (the stand-in in Ollama's place, as in first-agent.test.ts); 3. buy a simulated number for it and call it
// with SIPp; 4. see the call in the console. Step 2, the playground, is first-agent.test.ts and playground.test.ts.
// The placeholders (the address, the key, the bridge's port) get this stack's values; nothing else is changed.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sipBridgeVersion, type TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { answerFromWords, startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { untilEvery } from '../support/e2e.ts';
import { launchBrowser, type TestBrowser } from '../support/browser.ts';
import { buildConsole } from '../../web/build-console.ts';
import { tourBlock } from '../support/readme-tour.ts';

const FIRST_MESSAGE = 'Hello, thank you for calling Acme Dental.';
const NO_KEYS = Object.fromEntries(
  [
    'OPENAI_API_KEY',
    'ANTHROPIC_API_KEY',
    'GOOGLE_API_KEY',
    'GEMINI_API_KEY',
    'DEEPGRAM_API_KEY',
    'ELEVEN_API_KEY',
    'ELEVENLABS_API_KEY',
    'CARTESIA_API_KEY',
    'LLM_MODEL_PATH',
  ].map((k) => [k, '']),
);

let stack: TestStack;
let llm: FakeOpenAI;
let key: string;
let dist: string;
let browser: TestBrowser | undefined;
const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(250);

beforeAll(async () => {
  dist = mkdtempSync(path.join(os.tmpdir(), 'vap-readme-tour-e2e-'));
  await buildConsole(dist);
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    if (String(req.messages[0]?.content ?? '').startsWith('You analyse')) {
      return { text: JSON.stringify({ summary: 'A caller rang the practice.', outcome: 'question_answered' }) };
    }
    return answerFromWords([], 'We open at nine in the morning.')(req);
  });
  ({ stack, key } = await fixture.start({
    org: 'readme tour',
    worker: true,
    sip: true,
    env: { ...NO_KEYS, LOCAL_LLM_BASE_URL: llm.url, WEB_DIST_DIR: dist, DISPATCH_TIMEOUT_SECONDS: '30', SIP_RINGING_TIMEOUT_SECONDS: '90' },
  }));
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await fixture.stop();
  await llm?.close();
  if (dist) rmSync(dist, { recursive: true, force: true });
});

/** A tour block in bash, as a reader's shell would run it; stdin is empty, as SIPp's keyboard must not wait on it. */
function bash(script: string, timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile('bash', ['-euo', 'pipefail', '-c', `exec </dev/null\n${script}`], { timeout: timeoutMs }, (err, stdout, stderr) =>
      err ? reject(new Error(`${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout),
    ),
  );
}

/** A tour block with this stack's address and key in the placeholders' place; fails if a placeholder is missing. */
function withStack(block: string): string {
  expect(block).toMatch(/^API=http:\/\/127\.0\.0\.1:8080$/m);
  expect(block).toMatch(/^KEY=vap_sk_\.\.\.(\s|$)/m);
  return block.replace(/^API=.*$/m, `API=${stack.controlPlaneUrl}`).replace(/^KEY=vap_sk_\.\.\.(.*)$/m, `KEY=${key}$1`);
}

describe.skipIf(!sipBridgeVersion())("the README's tour", () => {
  it('makes an agent, buys a simulated number, calls it with SIPp and finds the call in the console', { timeout: 300_000 }, async () => {
    // 1. Make an agent.
    const made = await bash(withStack(tourBlock('agent')) + '\necho "AGENT=$AGENT"\n');
    const agentId = /AGENT=([0-9a-f-]{36})/.exec(made)?.[1];
    expect(agentId, made).toBeDefined();
    expect(made).toMatch(/^\[\]$/m);

    // 3. Buy a simulated number and call it with the SIP peer: the block as written, the bridge on this stack's port.
    const phone = tourBlock('phone');
    expect(phone).toContain('sipp 127.0.0.1:5060 ');
    const script = withStack(phone).replace('sipp 127.0.0.1:5060 ', `sipp ${stack.sipAddress!} `) + '\necho "NUMBER=$(echo "$NUMBER" | jq -c .)"\n';
    const out = await bash(script);
    const number = JSON.parse(/^NUMBER=(.*)$/m.exec(out)![1]!) as { id: string; phone_number: string; agent_id: string };
    expect(number.agent_id).toBe(agentId);
    // The search printed three numbers, and the block's last command printed the call's record.
    expect(out.match(/^\+1415\d{7}$/gm)?.length, out).toBeGreaterThanOrEqual(3);
    expect(out).toContain('"status"');
    const call = await until('the call to complete with the greeting', async () => {
      const list = (await api('GET', `/v1/calls?phone_number_id=${number.id}&limit=1`)).body;
      const c = list.items?.[0];
      return c?.status === 'completed' && c.messages?.length ? c : null;
    });
    expect(call).toMatchObject({ type: 'inbound', agent_id: agentId, to_number: number.phone_number, end_reason: 'user_hangup' });
    expect(call.messages[0]).toMatchObject({ role: 'agent', content: FIRST_MESSAGE });

    // 4. See the call in the console: signed in with the key, Calls lists it first, and its page opens.
    browser = await launchBrowser({});
    const page = await browser.newPage();
    await page.goto(`${stack.controlPlaneUrl!}/console`);
    await page.getByLabel('Secret API key or dashboard token').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('#app:not([hidden])').waitFor();
    await page.evaluate(`location.hash = '#/calls'`);
    await page.locator('#view h1', { hasText: 'Calls' }).waitFor();
    const first = page.locator('#call-results tbody tr').first();
    await first.waitFor();
    expect(await first.textContent()).toContain(number.phone_number);
    await first.locator('a').first().click();
    await page.locator('#view h1', { hasText: `Call ${call.id.slice(0, 8)}` }).waitFor();
    await page.locator('#view', { hasText: FIRST_MESSAGE }).first().waitFor();
    await page.close();
  });
});
