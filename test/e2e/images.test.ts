// The container images, built and run: both Dockerfiles are built with podman on the local base image
// (scripts/local-base-image.sh), the migrations, the control plane and a media worker run from them on the
// host network against this file's PostgreSQL database, Redis and LiveKit server, and a web call with local
// speech and an LLM stand-in goes through the containerised worker: greeting heard, a spoken question
// answered, the call completed. Runs where podman is installed (test/support/containers.ts says when).
// Here and not in test/deploy: it needs the stack and real-time speech, which the e2e pass runs one file at
// a time.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useStack, type TestStack } from '../support/stack.ts';
import { createTestDatabase } from '../support/db.ts';
import { answerFromWords, contentText, lastUserText, startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { disposeRtc } from '../support/rtc-client.ts';
import { webCall } from '../support/web-caller.ts';
import { synthesize, transcribe } from '../support/speech.ts';
import { apiClient, untilEvery } from '../support/e2e.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { buildImage, imageSize, imageTestDecision, localBaseImage, removeContainer, run, startContainer, sweepStaleContainers } from '../support/containers.ts';
import { freeTcpPort } from '../../scripts/stack/ports.ts';
import { waitReady } from '../../scripts/stack/readiness.ts';
import type { Service } from '../../scripts/stack/process.ts';
import { createSql, type Sql } from '../../control-plane/src/db/connect.ts';
import { createOrgWithKey } from '../../control-plane/src/modules/workspace/orgs.ts';
import { CALLER_RULES, HANGUP_TOKEN } from '../../control-plane/src/modules/agent-tests/conversation.ts';
import { FIRST_MESSAGE, ANSWER, OTHER_ANSWER, GRAMMAR } from '../support/dental-phrases.ts';

const decision = imageTestDecision();
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

const QUESTION = 'What time do you open tomorrow morning';
/** Words of ANSWER pocketsphinx catches from festival's voice (any one shows the caller heard the answer). */
const HEARD_ANSWER = /\b(nine|morning|open)\b/i;
/** The agent's lines in what a persona's model is asked: as the simulated caller's STT heard them. */
const agentHeard = (ask: string) => ask.split('\n').filter((l) => l.startsWith('Agent: '));

// Bounds, not expectations: a first build on a fresh machine makes the base image and runs `npm ci` and
// `apt-get install` inside the builds; later runs take the cached layers.
const BUILD_TIMEOUT_MS = 45 * 60_000;

let stack: TestStack;
let llm: FakeOpenAI;
let sql: Sql;
let dropDb: () => Promise<void>;
let key: string;
let agentId: string;
let controlPlaneUrl: string;
const images: Record<'controlPlane' | 'mediaWorker', { id: string; bytes: number }> = {} as never;
const containers: { service: Service; container: string }[] = [];

const api = apiClient(() => controlPlaneUrl, () => key);
const until = untilEvery(250);

describe.skipIf(!decision.run)(`the container images (${decision.why})`, () => {
  beforeAll(async () => {
    sweepStaleContainers();
    llm = await startFakeOpenAI({ ttftMs: 20 });
    const agentAnswer = answerFromWords([{ words: ['open', 'opening', 'time', 'morning', 'tomorrow'], text: ANSWER }], OTHER_ANSWER);
    llm.setResponder((req) => {
      // The voice-mode agent test's persona: the same stand-in plays the caller (the judge model is the agent's).
      if (contentText(req.messages[0]!).startsWith(CALLER_RULES)) {
        return { text: agentHeard(lastUserText(req)).some((l) => HEARD_ANSWER.test(l)) ? `Thank you, goodbye. ${HANGUP_TOKEN}` : QUESTION };
      }
      return agentAnswer(req);
    });

    // LiveKit posts its webhooks to the containerised control plane: its port is chosen before both start.
    const ports = { controlPlane: await freeTcpPort(), controlPlaneMetrics: await freeTcpPort(), worker: await freeTcpPort(), workerMetrics: await freeTcpPort() };
    controlPlaneUrl = `http://127.0.0.1:${ports.controlPlane}`;
    stack = await useStack({ webhookUrl: `${controlPlaneUrl}/internal/livekit/webhook` });

    const base = await localBaseImage(stack.logDir);
    images.controlPlane = { id: await buildImage('deploy/docker/control-plane.Dockerfile', `vap/control-plane:${pkg.version}`, base, stack.logDir), bytes: 0 };
    images.mediaWorker = { id: await buildImage('deploy/docker/media-worker.Dockerfile', `vap/media-worker:${pkg.version}`, base, stack.logDir), bytes: 0 };
    for (const image of Object.values(images)) image.bytes = imageSize(image.id);

    const db = await createTestDatabase();
    dropDb = db.drop;
    sql = createSql(db.url, { max: 2 });
    const shared = {
      NODE_ENV: 'test', // production refuses the stand-in LLM's plain-http loopback URL
      LOG_LEVEL: 'info',
      LIVEKIT_URL: stack.livekitUrl,
      LIVEKIT_API_KEY: stack.apiKey,
      LIVEKIT_API_SECRET: stack.apiSecret,
      WORKER_TOKEN: stack.workerToken,
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
    };
    const cpEnv = {
      ...shared,
      DATABASE_URL: db.url,
      MASTER_KEY: randomBytes(32).toString('base64'),
      PUBLIC_BASE_URL: controlPlaneUrl,
      LIVEKIT_PUBLIC_URL: stack.livekitUrl,
      HOST: '127.0.0.1',
      PORT: String(ports.controlPlane),
      METRICS_PORT: String(ports.controlPlaneMetrics),
      SHUTDOWN_TIMEOUT_MS: '5000',
    };
    // The migrate entry point of the image, as compose's one-shot `migrate` service runs it.
    await run('podman', ['run', '--rm', '--network', 'host', '--read-only', '--env', `DATABASE_URL=${db.url}`, '--env', 'NODE_ENV=test', images.controlPlane.id, 'node', 'control-plane/src/db/migrate-cli.ts'], `${stack.logDir}/migrate.log`);

    // Its DATA_DIR is a volume, as in the chart and compose: recordings kept on local disk go there.
    const cp = startContainer({ name: 'control-plane', image: images.controlPlane.id, env: cpEnv, logDir: stack.logDir, writable: ['/var/lib/vap'] });
    containers.push(cp);
    await waitReady(cp.service, 'control-plane container', async () => (await fetch(`${controlPlaneUrl}/health/ready`).catch(() => null))?.status === 200, 120_000);

    const worker = startContainer({
      name: 'worker',
      image: images.mediaWorker.id,
      env: {
        ...shared,
        CONTROL_PLANE_URL: controlPlaneUrl,
        WORKER_HEALTH_PORT: String(ports.worker),
        WORKER_METRICS_PORT: String(ports.workerMetrics),
        DRAIN_TIMEOUT_MS: '5000',
        LOAD_INCLUDES_CPU: 'false',
        // Room for a job process to start on a shared, busy machine (one past agents-js's 10 s deadline is
        // dropped; docs/operations.md, "Sizing").
        JOB_INIT_TIMEOUT_MS: '60000',
      },
      logDir: stack.logDir,
    });
    containers.push(worker);
    await waitReady(worker.service, 'media-worker container', async () => (await fetch(`http://127.0.0.1:${ports.worker}/`).catch(() => null))?.status === 200, 120_000);

    ({ api_key: key } = await createOrgWithKey(sql, 'images'));
    const modelId = await createStandInModel(api, llm.url, { system_prompt: 'You are the receptionist of Acme Dental.' });
    agentId = await createLocalAgent(api, { name: 'Receptionist', llm_id: modelId, first_message: FIRST_MESSAGE, enable_recording: true });
  }, BUILD_TIMEOUT_MS);

  afterAll(async () => {
    for (const c of containers.reverse()) {
      await c.service.stop();
      removeContainer(c.container);
    }
    await disposeRtc();
    await sql?.end();
    await llm?.close();
    await dropDb?.();
    // Sizes for docs/operations.md ("Container images").
    if (images.controlPlane) process.stdout.write(`image sizes: control plane ${(images.controlPlane.bytes / 1e6).toFixed(0)} MB, media worker ${(images.mediaWorker?.bytes / 1e6).toFixed(0)} MB\n`);
  }, 60_000);

  it('the control plane is ready, and counts the containerised worker', async () => {
    const ready = await until('the worker in /health/ready', async () => {
      const res = await fetch(`${controlPlaneUrl}/health/ready`);
      const body = (await res.json()) as { checks: Record<string, { status: string }> };
      return res.status === 200 && body.checks.workers?.status === 'ok' ? body : null;
    });
    expect(ready.checks.database?.status).toBe('ok');
    expect(ready.checks.livekit?.status).toBe('ok');
  });

  it('serves a web call through the containerised worker: greeting, a spoken answer, completed', async () => {
    const { callId, client, heard: agentAudio } = await webCall(api, { agent_id: agentId });
    try {
      // festival in the worker's image spoke the greeting.
      const greeting = await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
      expect(await transcribe(greeting, { jsgf: GRAMMAR })).toBe('hello thank you for calling acme dental');
      // pocketsphinx in the image heard the question: the stand-in answers it only when its words arrived.
      agentAudio.reset();
      await client.speak(await synthesize('What time do you open tomorrow morning'), { trailingSilenceMs: 1500 });
      const answer = await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
      expect(await transcribe(answer, { jsgf: GRAMMAR })).toBe('we open at nine in the morning');
      expect(llm.requests.map(lastUserText).some((t) => /\b(open|time|morning|tomorrow)\b/i.test(t))).toBe(true);
    } finally {
      await client.leave();
    }
    const stopped = await api('POST', `/v1/calls/${callId}/stop`);
    expect(stopped.status).toBe(200);
    const call = await until('the completed call with its conversation', async () => {
      const c = (await api('GET', `/v1/calls/${callId}`)).body;
      return c.status === 'completed' && c.messages?.some((m: { content: string }) => m.content === ANSWER) ? c : null;
    });
    expect(call.end_reason).toBe('api_stop');
    expect(call.messages[0]).toMatchObject({ role: 'agent', content: FIRST_MESSAGE });
    // The job ran in the container: its log names the call.
    expect(readFileSync(`${stack.logDir}/worker.log`, 'utf8')).toContain(callId);
    // The worker's recording reached the control plane's DATA_DIR in its container and reads back as a WAV.
    await until('the recording', async () => ((await api('GET', `/v1/calls/${callId}`)).body.recording_url ? true : null));
    const recording = await fetch(`${controlPlaneUrl}/v1/calls/${callId}/recording`, { headers: { authorization: `Bearer ${key}` } });
    expect(recording.status).toBe(200);
    expect(Buffer.from(await recording.arrayBuffer()).subarray(0, 4).toString('latin1')).toBe('RIFF');
  }, 300_000);

  it('runs a voice-mode agent test from the containerised control plane: its simulated caller speaks and listens in that image', async () => {
    // A persona scenario: the control plane's caller speaks the persona's lines with festival and hears the agent
    // with pocketsphinx, both from the control plane's image; the containerised worker answers.
    const scenario = await api('POST', '/v1/test-scenarios', {
      name: 'opening hours',
      persona: 'You want to know what time the practice opens tomorrow morning.',
      max_turns: 3,
      max_duration_seconds: 120,
      expectations: [
        { type: 'transcript_contains', text: 'nine in the morning', role: 'agent' },
        { type: 'ended_by', by: 'caller' },
      ],
    });
    expect(scenario.status, JSON.stringify(scenario.body)).toBe(201);
    const before = llm.requests.length;
    const created = await api('POST', `/v1/agents/${agentId}/test-runs`, { scenario_ids: [scenario.body.id], mode: 'voice' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const run = await until(
      'the test run to finish',
      async () => {
        const r = (await api('GET', `/v1/test-runs/${created.body.id}`)).body;
        return r.status === 'completed' ? r : null;
      },
      240_000,
    );
    const [result] = run.results;
    expect(result, JSON.stringify(result)).toMatchObject({ status: 'passed', ended_by: 'caller' });
    // festival in the control plane's image spoke the question: the worker heard it and answered.
    expect(result.messages.some((m: { role: string; content: string }) => m.role === 'agent' && m.content === ANSWER)).toBe(true);
    // pocketsphinx in the control plane's image heard the answer: the persona's model was given its words.
    const asked = llm.requests.slice(before).filter((r) => contentText(r.messages[0]!).startsWith(CALLER_RULES)).flatMap((r) => agentHeard(lastUserText(r)));
    expect(asked.some((l) => HEARD_ANSWER.test(l)), JSON.stringify(asked)).toBe(true);
  }, 300_000);
});
