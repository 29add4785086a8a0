// bench:firstaudio — how long a caller waits in silence for the greeting, against the floor, in one run
// (docs/benchmarks.md, "First audio"):
//   - web: POST /v1/calls/web sent -> the first frame of the agent above the speech threshold at a real rtc-node
//     participant, one call at a time;
//   - phone: SIPp's INVITE -> the first non-silent decoded RTP sample of the greeting, on a purchased number;
//   - floor: the same POST, dispatched the same way (same agent name, same process pool), to a bare agents-js
//     job that joins and publishes the greeting as a prepared WAV (first-audio/floor-agent.ts): what the control
//     plane, dispatch, a prewarmed job process, the join and the audio path cost with no agent behind them;
//   - floor phone: the same number's phone calls answered by that bare job: what the SIP bridge and LiveKit cost
//     a phone call with no agent behind it (frames it plays before the bridge subscribes are lost);
//   - the job process's own timeline (worker log, "call start timeline"): each step's end, and each event-loop
//     stall over 50 ms in the call's first 3 s, and of those the ones in which the loop itself ran over 50 ms
//     (the others are the process waiting for a core); web and phone calls' stalls are counted apart;
//   - the machine's CPU by process over each call's first 3 s, and the call's job process by thread;
//   - the end -> the call's job process gone (its own `job process exit` log line), so the next call has it: web
//     calls alternate a hang-up then POST /v1/calls/{id}/stop, and the stop with the caller still in the room;
//     phone calls hang up.
// The agent and the floor take turns in blocks of BLOCK calls, each behind its own worker process (one runs at a
// time; both register under the agent name the control plane dispatches to). Each worker's first call of each
// kind is a warm-up, not counted. Providers: local STT (pocketsphinx) and TTS (espeak-ng); the LLM stand-in is
// not on the greeting's path. A p95 of fewer than 100 samples is printed "n/a".
// Usage: npm run bench:firstaudio [-- CALLS]   (default 100 of each kind)   Env: BENCH_BLOCK (default 10),
// BENCH_PHONE=0 skips phone calls, BENCH_FLOOR=0 the floor, BENCH_AGENT=0 the agent; BENCH_WORKER_NODE_ARGS
// (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") are Node flags for the workers and their job processes;
// BENCH_STANDBY (default 1) is the control plane's STANDBY_AGENTS: web calls take a standby agent's room when one
// is ready, and phone calls' agents join the caller's room from one (0: every call dispatched).
// Each call starts on an idle machine: after a standby agent is ready, the benchmark waits until the worker's
// processes are quiet (the last call's replacement process has loaded; BENCH_QUIET=0: calls back to back), and
// it counts the machine's CPU by process over each call's first 3 s (first-audio/cpu-census.ts). The worker
// takes FORK_QUIET_MS and FORK_DEFER_MS from the environment (FORK_QUIET_MS=0 FORK_DEFER_MS=3000: the policy
// before the quiet window). BENCH_PIN=1 gives the worker (and its job processes) the last core and the rest of
// the stack the others, as a worker on a node of its own.
import { disposeRtc, nowMs, RtcClient } from '../test/support/rtc-client.ts';
import { mkdtempSync, readFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import path from 'node:path';
import type { RunningStack } from '../scripts/stack/supervisor.ts';
import { createBenchAgent, createBenchModel, startBenchStack } from './support/bench-stack.ts';
import { PortPicker } from '../scripts/stack/ports.ts';
import { startFakeOpenAI } from '../test/support/fake-openai.ts';
import { SipPhone } from '../test/support/sip-phone.ts';
import { bridgeTimesByCaller } from './first-audio/bridge-log.ts';
import { resample, synthesize, writeWav } from '../test/support/speech.ts';
import { writeResults } from './support/results.ts';
import { type Classifier, censusSummary, cpuBetween, snapshot } from './first-audio/cpu-census.ts';
import { api, devKey } from './support/room-call.ts';
import { PIN, STACK_CPUS, WORKER_CPU, type Worker, freedAfter, startWorker, stopWorker } from './first-audio/workers.ts';
import { censusAt, pinStack, windowCpu } from './first-audio/cpu-window.ts';
import {
  type CallResult,
  type EndOrder,
  type Timeline,
  bridgeSteps,
  exits,
  fmt,
  joinTimelines,
  round,
  stats,
  stepStats,
  timelines,
} from './first-audio/analysis.ts';

const CALLS = Number(process.argv[2] ?? 100);
const BLOCK = Number(process.env.BENCH_BLOCK ?? 10);
const PHONE = process.env.BENCH_PHONE !== '0';
const FLOOR = process.env.BENCH_FLOOR !== '0';
const AGENT = process.env.BENCH_AGENT !== '0';
const STANDBY = process.env.BENCH_STANDBY ?? '1';
const QUIET = process.env.BENCH_QUIET !== '0';
const FIRST_MESSAGE = 'Hello, thank you for calling. How can I help you today?';
/** The job's stalls are counted over the call's first seconds (start-timeline.ts's window). */
const STALL_MS = 50;
/** Each call lasts this long from the POST (or the INVITE), past the job's 3 s window, then the caller leaves. */
const HOLD_MS = 3300;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * With standby agents on, waits (up to 10 s) until the control plane has one ready, as a pool sized for the
 * traffic would: the pool refills within a second of a take, and the worker just started needs a heartbeat and a
 * top-up first. A call that still finds none is dispatched and counted as such (`on_standby`).
 */
async function standbyReady(stack: RunningStack): Promise<void> {
  if (STANDBY === '0') return;
  const end = Date.now() + 10_000;
  while (Date.now() < end) {
    try {
      const text = await (await fetch(`http://127.0.0.1:${stack.ports.controlPlaneMetrics}/metrics`)).text();
      if (Number(/^vap_standby_rooms\{state="ready"\} (\d+)/m.exec(text)?.[1] ?? 0) >= 1) return;
    } catch {
      // not up yet
    }
    await sleep(100);
  }
}

/**
 * Waits (up to 10 s) until the worker and its job processes use under 5 % of a core over 200 ms: the replacement
 * of the last call's process has loaded (over a second of CPU), as on a worker with spare capacity, so each call
 * starts on an idle machine. The same for the agent and the floor. Returns the ms waited.
 */
async function workerQuiet(w: Worker): Promise<number> {
  if (!QUIET) return 0;
  const t0 = nowMs();
  const own: Classifier = (pid, ppid) => (pid === w.proc.pid || ppid === w.proc.pid ? 'worker' : null);
  let prev = snapshot(own);
  while (prev && nowMs() - t0 < 10_000) {
    await sleep(200);
    const next = snapshot(own)!;
    if ((cpuBetween(prev, next).worker ?? 0) <= 10) break;
    prev = next;
  }
  return nowMs() - t0;
}

async function webCall(stack: RunningStack, key: string, agentId: string, w: Worker, order: EndOrder = 'leave_then_stop'): Promise<CallResult> {
  await standbyReady(stack);
  const quietMs = await workerQuiet(w);
  const census = censusAt(w);
  const t0 = nowMs();
  const created = await api(stack, key, 'POST', '/v1/calls/web', { agent_id: agentId });
  const t1 = nowMs();
  if (created.status !== 201) throw new Error(`POST /v1/calls/web answered ${created.status}: ${JSON.stringify(created.body)}`);
  const client = await RtcClient.join(created.body.server_url, created.body.participant_token);
  let first: number;
  let cpu: Pick<CallResult, 'cpu' | 'job_threads'> = {};
  try {
    const rec = client.record({});
    await client.publishMicrophone();
    await rec.until(() => rec.firstSpeechAt !== undefined, 60_000, 'the first message');
    first = rec.firstSpeechAt! - t0;
    // The caller listens to the greeting: the job's first seconds (its loop stalls) are part of the call.
    cpu = await windowCpu(w, t0, census);
    await sleep(Math.max(0, HOLD_MS - (nowMs() - t0)));
  } finally {
    if (order === 'leave_then_stop') await client.leave();
  }
  const stopAt = nowMs();
  await api(stack, key, 'POST', `/v1/calls/${created.body.id}/stop`);
  // The caller, still in the room, is put out by the stop (the room deleted), then leaves. rtc-node's leave can
  // wait for good once the server deleted the room under it: the client is let go after 10 s at most.
  if (order === 'stop_with_caller') await Promise.race([client.leave().catch(() => {}), sleep(10_000)]);
  const freed = await freedAfter(w, stopAt, created.body.id);
  return {
    id: created.body.id,
    t0,
    first_audio_ms: first,
    create_ms: t1 - t0,
    freed_ms: freed,
    end_order: order,
    standby: String(created.body.room_name).startsWith('standby-'),
    ...cpu,
    quiet_wait_ms: quietMs,
  };
}

/** Calls whose agent was a standby agent (vap_standby_takes_total{result="claimed"}). */
async function standbyClaims(stack: RunningStack): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${stack.ports.controlPlaneMetrics}/metrics`)).text();
  return Number(/^vap_standby_takes_total\{result="claimed"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

async function phoneCall(stack: RunningStack, key: string, number: string, from: string, w: Worker): Promise<CallResult> {
  await standbyReady(stack);
  const quietMs = await workerQuiet(w);
  const claimsBefore = await standbyClaims(stack);
  const census = censusAt(w);
  const phone = await SipPhone.call({ bridge: stack.sipAddress!, to: number, from, timeoutSeconds: 120 });
  let first: number;
  let invite: number;
  let hungUp: number;
  let cpu: Pick<CallResult, 'cpu' | 'job_threads'> = {};
  try {
    await phone.waitFor('the answer', () => phone.answered || phone.finalStatus, 120_000);
    if (!phone.answered) throw new Error(`call refused with ${phone.finalStatus}`);
    await phone.startMedia();
    await phone.waitFor('the first audio', () => phone.firstAudioAt !== null, 60_000);
    // From the INVITE on the wire (SIPp's trace), not from SIPp's start.
    invite = phone.inviteSentAt ?? phone.startedAt + performance.timeOrigin;
    first = phone.firstAudioAt! + performance.timeOrigin - invite;
    cpu = await windowCpu(w, invite, census);
    await sleep(Math.max(0, HOLD_MS - (nowMs() - invite)));
  } finally {
    hungUp = nowMs();
    await phone.close();
  }
  // One call at a time: the newest call is this one (its id joins the worker's timeline to the INVITE), and a claim
  // since the INVITE is its own.
  const listed = await api<{ items: { id: string }[] }>(stack, key, 'GET', '/v1/calls?limit=1');
  const freed = await freedAfter(w, hungUp, listed.body.items[0]?.id ?? phone.callId);
  return {
    id: listed.body.items[0]?.id ?? phone.callId,
    t0: invite,
    first_audio_ms: first,
    create_ms: 0,
    freed_ms: freed,
    standby: (await standbyClaims(stack)) > claimsBefore,
    ...cpu,
    quiet_wait_ms: quietMs,
    from,
  };
}

async function main() {
  const started = Date.now();
  const llm = await startFakeOpenAI({ ttftMs: 200 });
  llm.setResponder(() => ({ text: 'We open at nine.' }));
  // The floor plays what the agent would: the greeting from the same engine, at the agent's output rate.
  const wavDir = mkdtempSync(path.join(tmpdir(), 'vap-firstaudio-'));
  const floorWav = path.join(wavDir, 'greeting.wav');
  writeWav(floorWav, resample(await synthesize(FIRST_MESSAGE, 'espeak-ng'), 24000));
  const pick = new PortPicker();
  let stack: RunningStack | null = null;
  let worker: Worker | null = null;
  try {
    stack = await startBenchStack({
      sip: PHONE,
      worker: false,
      logLevel: process.env.BENCH_STACK_LOG_LEVEL ?? 'warn',
      // The bridge's few lines per call give its side of each phone call's start (bridgeSteps): info at least.
      sipLogLevel: process.env.BENCH_STACK_LOG_LEVEL === 'debug' ? 'debug' : 'info',
      // Standby agents as `npm start` has them (BENCH_STANDBY=0: every call dispatched, as before them).
      env: { STANDBY_AGENTS: STANDBY },
    });
    if (PIN) pinStack();
    const key = await devKey(stack);
    const agentId = await createBenchAgent(stack, key, {
      name: 'First audio',
      llm_id: await createBenchModel(stack, key, llm.url),
      transcriber: { provider: 'local' },
      tts: { provider: 'local', model: 'espeak-ng' },
      first_message: FIRST_MESSAGE,
      silence_timeout_seconds: 600,
    });
    let number = '';
    if (PHONE) {
      const n = await api(stack, key, 'POST', '/v1/phone-numbers', { agent_id: agentId, area_code: '415' });
      if (n.status !== 200) throw new Error(`purchase answered ${n.status}: ${JSON.stringify(n.body)}`);
      number = n.body.phone_number as string;
    }

    const web: CallResult[] = [];
    const phone: CallResult[] = [];
    const floor: CallResult[] = [];
    // Phone calls answered by the floor: what the SIP bridge and LiveKit cost a phone call with no agent behind it.
    const floorPhone: CallResult[] = [];
    const agentLogs: string[] = [];
    const floorLogs: string[] = [];
    const loadAt = { start: os.loadavg(), end: [] as number[] };
    let workers = 0;
    let caller = 0;
    const from = () => `+1555010${String(1000 + (caller++ % 1000)).slice(1)}`;
    const floorLeft = () => FLOOR && (floor.length < CALLS || (PHONE && floorPhone.length < CALLS));
    while ((AGENT && (web.length < CALLS || (PHONE && phone.length < CALLS))) || floorLeft()) {
      for (const kind of ['agent', 'floor'] as const) {
        if (kind === 'floor' && !floorLeft()) continue;
        if (kind === 'agent' && (!AGENT || (web.length >= CALLS && (!PHONE || phone.length >= CALLS)))) continue;
        worker = await startWorker(stack, kind, kind === 'floor' ? { FLOOR_WAV: floorWav } : {}, pick, ++workers);
        (kind === 'agent' ? agentLogs : floorLogs).push(worker.log);
        // Warm-up, not counted: the first call of each kind on a new worker.
        await webCall(stack, key, agentId, worker);
        if (PHONE) await phoneCall(stack, key, number, from(), worker);
        for (let i = 0; i < BLOCK; i++) {
          if (kind === 'floor') {
            if (floor.length < CALLS) {
              floor.push(await webCall(stack, key, agentId, worker));
              process.stderr.write(`floor ${floor.length}: ${floor.at(-1)!.first_audio_ms.toFixed(0)} ms\n`);
            }
            if (PHONE && floorPhone.length < CALLS) {
              floorPhone.push(await phoneCall(stack, key, number, from(), worker));
              process.stderr.write(`floor phone ${floorPhone.length}: ${floorPhone.at(-1)!.first_audio_ms.toFixed(0)} ms\n`);
            }
            continue;
          }
          if (web.length < CALLS) {
            // Both end orders, alternately: a hang-up then the stop, and the stop with the caller still there.
            web.push(await webCall(stack, key, agentId, worker, web.length % 2 ? 'stop_with_caller' : 'leave_then_stop'));
            process.stderr.write(
              `web ${web.length}: ${web.at(-1)!.first_audio_ms.toFixed(0)} ms, freed ${web.at(-1)!.freed_ms?.toFixed(0)} ms after the stop\n`,
            );
          }
          if (PHONE && phone.length < CALLS) {
            phone.push(await phoneCall(stack, key, number, from(), worker));
            process.stderr.write(
              `phone ${phone.length}: ${phone.at(-1)!.first_audio_ms.toFixed(0)} ms, freed ${phone.at(-1)!.freed_ms?.toFixed(0)} ms after the hang-up\n`,
            );
          }
        }
        // The last calls' timelines are logged 3 s after their start.
        await sleep(3500);
        await stopWorker(worker);
        worker = null;
      }
    }
    loadAt.end = os.loadavg();

    const webLines = joinTimelines(web, agentLogs.flatMap(timelines));
    const floorLines = joinTimelines(floor, floorLogs.flatMap(timelines));
    const phoneLines = joinTimelines(phone, agentLogs.flatMap(timelines));
    const floorPhoneLines = joinTimelines(floorPhone, floorLogs.flatMap(timelines));
    const bridgeTimes = PHONE ? bridgeTimesByCaller(readFileSync(path.join(stack.logDir, 'sip.log'), 'utf8')) : null;
    const bridge = bridgeTimes && bridgeSteps(phoneLines, bridgeTimes);
    const floorBridge = bridgeTimes && FLOOR ? bridgeSteps(floorPhoneLines, bridgeTimes) : null;
    // Stalls over the threshold per call, measured three ways: the stall itself (wall), the time the loop was not
    // idle in its poll over it (busy: work in the job, or the job held off a core in the middle of it), and the
    // time its thread ran on a core (cpu: the job's own work alone; the rest is waiting for a core while the
    // machine's other processes and this process's other threads use them).
    type Measure = 'wall' | 'busy' | 'cpu';
    const size = (b: Timeline['loop_blocks'][number], m: Measure) => (m === 'busy' ? (b.busy_ms ?? b.ms) : m === 'cpu' ? (b.cpu_ms ?? b.ms) : b.ms);
    const stalls = (lines: { t: Timeline }[], m: Measure) => {
      const perCall = lines.map(({ t }) => t.loop_blocks.filter((b) => size(b, m) > STALL_MS).length);
      const all = lines.flatMap(({ t }) => t.loop_blocks.map((b) => size(b, m)));
      return {
        calls: lines.length,
        calls_with_any: perCall.filter((n) => n > 0).length,
        total: perCall.reduce((a, b) => a + b, 0),
        longest_ms: all.length ? Math.max(...all) : 0,
      };
    };
    // Over every stall past the threshold: its wall time, and how much of it the loop's thread was on a core.
    const stallTime = (lines: { t: Timeline }[]) => {
      const over = lines.flatMap(({ t }) => t.loop_blocks.filter((b) => b.ms > STALL_MS));
      const sum = (f: (b: Timeline['loop_blocks'][number]) => number | undefined) => over.reduce((a, b) => a + (f(b) ?? 0), 0);
      return { stalls: over.length, wall_ms: sum((b) => b.ms), cpu_ms: sum((b) => b.cpu_ms), runq_ms: sum((b) => b.runq_ms) };
    };
    // CPU ms per kind of process over each call's first 3 s, the mean over the calls: the call's own job process
    // apart from the worker's others (a standby agent joining for the next call, a replacement loading).
    const cpuCensus = (lines: { c: CallResult; t: Timeline }[]) =>
      censusSummary(
        lines.flatMap(({ c, t }) => {
          if (!c.cpu) return [];
          const out: Record<string, number> = {};
          for (const [k, v] of Object.entries(c.cpu)) {
            const kind = k === `job:${t.pid}` ? "the call's job process" : k.startsWith('job:') ? 'other job processes' : k;
            out[kind] = (out[kind] ?? 0) + v;
          }
          return [out];
        }),
      );
    // The call's own job process over the same window by thread, the mean over the calls: its event loop against the
    // media SDK's threads, the VAD's and V8's helpers, all of which compete with the loop for the cores.
    const threadCensus = (lines: { c: CallResult; t: Timeline }[]) =>
      censusSummary(lines.flatMap(({ c, t }) => (c.job_threads?.[`job:${t.pid}`] ? [c.job_threads[`job:${t.pid}`]!] : [])));
    const webStats = stats(web.map((c) => c.first_audio_ms));
    const floorStats = stats(floor.map((c) => c.first_audio_ms));
    const phoneStats = stats(phone.map((c) => c.first_audio_ms));
    const floorPhoneStats = stats(floorPhone.map((c) => c.first_audio_ms));
    const freed = [...web, ...phone].map((c) => c.freed_ms).filter((x): x is number => x !== null);
    const results = {
      setup: {
        tts: 'local espeak-ng',
        stt: 'local pocketsphinx',
        llm: 'stand-in (not on the greeting path)',
        web_client: 'rtc-node',
        phone_client: 'SIPp + decoded G.711 RTP',
        block: BLOCK,
        first_message: FIRST_MESSAGE,
      },
      calls: CALLS,
      standby_agents: Number(STANDBY),
      // Each call waited for a quiet worker (BENCH_QUIET); the worker's fork policy (its defaults when unset).
      quiet_start: QUIET,
      // BENCH_PIN: the worker on a core of its own, the rest of the stack on the others.
      pinned: PIN ? { worker_cpu: WORKER_CPU, stack_cpus: STACK_CPUS } : null,
      fork_policy: { FORK_QUIET_MS: process.env.FORK_QUIET_MS ?? 'default', FORK_DEFER_MS: process.env.FORK_DEFER_MS ?? 'default' },
      // Calls that took a standby agent's room; the others were dispatched (no standby agent was ready).
      on_standby: { web: web.filter((c) => c.standby).length, floor: floor.filter((c) => c.standby).length, phone: phone.filter((c) => c.standby).length },
      load_average: loadAt,
      web_post_to_first_audio_ms: webStats,
      floor_post_to_first_audio_ms: floorStats,
      web_over_floor_p50_ms: webStats.p50 !== null && floorStats.p50 !== null ? round(webStats.p50 - floorStats.p50) : null,
      phone_invite_to_first_audio_ms: phoneStats,
      phone_over_web_p50_ms: phoneStats.p50 !== null && webStats.p50 !== null ? round(phoneStats.p50 - webStats.p50) : null,
      // The floor answering phone calls: INVITE -> first audio with nothing but a bare participant behind the bridge,
      // how far behind the web floor that is, and how far the agent's phone calls are over it.
      floor_phone_invite_to_first_audio_ms: floorPhoneStats,
      floor_phone_over_floor_web_p50_ms: floorPhoneStats.p50 !== null && floorStats.p50 !== null ? round(floorPhoneStats.p50 - floorStats.p50) : null,
      phone_over_floor_phone_p50_ms: phoneStats.p50 !== null && floorPhoneStats.p50 !== null ? round(phoneStats.p50 - floorPhoneStats.p50) : null,
      // POST sent -> the job's entry, and the end of each of its steps (the job process's clock, the same host).
      web_post_to_step_ms: stepStats(webLines),
      floor_post_to_step_ms: stepStats(floorLines),
      // From the INVITE on the wire: job_entry is when the agent was given the call.
      phone_invite_to_step_ms: stepStats(phoneLines),
      floor_phone_invite_to_step_ms: stepStats(floorPhoneLines),
      // The SIP bridge's side, from its log: INVITE -> its 200 OK and -> the agent's track reaching it; and how long
      // after the bridge had the track the agent's job learnt of it (its audio_subscribed, which gates the greeting).
      phone_bridge_ms: bridge,
      floor_phone_bridge_ms: floorBridge,
      // Web calls' job processes (the fields' meaning since they were added), then phone calls' apart.
      loop_blocks_over_50ms: stalls(webLines, 'wall'),
      loop_busy_over_50ms: stalls(webLines, 'busy'),
      loop_cpu_over_50ms: stalls(webLines, 'cpu'),
      loop_stall_time: stallTime(webLines),
      phone_loop_blocks_over_50ms: stalls(phoneLines, 'wall'),
      phone_loop_busy_over_50ms: stalls(phoneLines, 'busy'),
      phone_loop_cpu_over_50ms: stalls(phoneLines, 'cpu'),
      phone_loop_stall_time: stallTime(phoneLines),
      // The floor's job (bare agents-js) in the same run: what a job with none of the agent's work suffers.
      floor_loop_blocks_over_50ms: stalls(floorLines, 'wall'),
      floor_loop_cpu_over_50ms: stalls(floorLines, 'cpu'),
      // The machine's CPU over each call's first 3 s by process (bench/first-audio/cpu-census.ts), mean ms per call:
      // 3 s of 2 cores is 6000 ms.
      cpu_in_first_3s: { cores: os.cpus().length, web: cpuCensus(webLines), phone: cpuCensus(phoneLines), floor: cpuCensus(floorLines) },
      // The call's job process of the line above, by thread (bench/first-audio/cpu-census.ts, threadCpuBetween).
      job_cpu_by_thread_in_first_3s: { web: threadCensus(webLines), phone: threadCensus(phoneLines), floor: threadCensus(floorLines) },
      // The end -> the call's job process exited (its own log line): all calls, then web calls by end order and
      // phone calls (a hang-up), and the floor's bare job in the same run.
      end_to_worker_free_ms: stats(freed),
      end_to_job_exit_ms: {
        web_leave_then_stop: stats(exits(web.filter((c) => c.end_order === 'leave_then_stop'))),
        web_stop_with_caller: stats(exits(web.filter((c) => c.end_order === 'stop_with_caller'))),
        phone_hang_up: stats(exits(phone)),
        floor: stats(exits(floor)),
        jobs_never_seen_exiting: [...web, ...phone].filter((c) => c.freed_ms === null).length,
      },
      // Before each call: the wait for the worker's processes to be quiet (its last replacement process loaded).
      quiet_wait_ms: {
        web: stats(web.map((c) => c.quiet_wait_ms ?? 0)),
        phone: stats(phone.map((c) => c.quiet_wait_ms ?? 0)),
        floor: stats(floor.map((c) => c.quiet_wait_ms ?? 0)),
      },
      targets: {
        web_p50_le_500: webStats.p50 !== null && webStats.p50 <= 500,
        web_p95_le_800: webStats.p95 !== null && webStats.p95 <= 800,
        web_p50_le_floor_plus_150: webStats.p50 !== null && floorStats.p50 !== null && webStats.p50 <= floorStats.p50 + 150,
        no_loop_block_over_50ms: [...webLines, ...phoneLines].every(({ t }) => t.loop_blocks.every((b) => b.ms <= STALL_MS)),
        phone_p50_le_web_plus_50: phoneStats.p50 !== null && webStats.p50 !== null && phoneStats.p50 <= webStats.p50 + 50,
        worker_free_within_1s: freed.length > 0 && freed.every((x) => x <= 1000),
      },
      samples: {
        web: web.map((c) => round(c.first_audio_ms)),
        floor: floor.map((c) => round(c.first_audio_ms)),
        phone: phone.map((c) => round(c.first_audio_ms)),
        floor_phone: floorPhone.map((c) => round(c.first_audio_ms)),
        freed: freed.map(round),
      },
      timelines: webLines.map(({ c, t }) => ({ entry_ms: round(t.started_at_ms - c.t0), steps: t.steps, loop_blocks: t.loop_blocks })),
      phone_timelines: phoneLines.map(({ c, t }) => ({ entry_ms: round(t.started_at_ms - c.t0), steps: t.steps, loop_blocks: t.loop_blocks })),
      wall_seconds: Math.round((Date.now() - started) / 1000),
    };
    const file = writeResults(process.env.BENCH_RESULTS ?? 'first-audio', results);
    console.log(
      `web   ${fmt(webStats)}\nfloor ${fmt(floorStats)}\nphone ${fmt(phoneStats)}\nfloor phone ${fmt(floorPhoneStats)}\nfreed ${fmt(results.end_to_worker_free_ms)}`,
    );
    console.log(`loop blocks over ${STALL_MS} ms: ${JSON.stringify(results.loop_blocks_over_50ms)}`);
    console.log(`  of which the loop ran over ${STALL_MS} ms: ${JSON.stringify(results.loop_busy_over_50ms)}`);
    console.log(
      `  of which its thread was on a core over ${STALL_MS} ms: ${JSON.stringify(results.loop_cpu_over_50ms)}; ${JSON.stringify(results.loop_stall_time)}`,
    );
    console.log(`phone calls' loop blocks over ${STALL_MS} ms: ${JSON.stringify(results.phone_loop_blocks_over_50ms)}`);
    console.log(`  of which the loop ran over ${STALL_MS} ms: ${JSON.stringify(results.phone_loop_busy_over_50ms)}`);
    console.log(
      `  of which its thread was on a core over ${STALL_MS} ms: ${JSON.stringify(results.phone_loop_cpu_over_50ms)}; ${JSON.stringify(results.phone_loop_stall_time)}`,
    );
    console.log(
      `floor jobs' loop blocks over ${STALL_MS} ms: ${JSON.stringify(results.floor_loop_blocks_over_50ms)}; on a core: ${JSON.stringify(results.floor_loop_cpu_over_50ms)}`,
    );
    for (const kind of ['web', 'phone', 'floor'] as const) {
      console.log(`CPU in a ${kind} call's first 3 s (mean ms): ${JSON.stringify(results.cpu_in_first_3s[kind])}`);
      console.log(`  its job process by thread: ${JSON.stringify(results.job_cpu_by_thread_in_first_3s[kind])}`);
    }
    for (const [k, v] of Object.entries(results.web_post_to_step_ms)) console.log(`web   POST -> ${k}: ${fmt(v)}`);
    for (const [k, v] of Object.entries(results.phone_invite_to_step_ms)) console.log(`phone INVITE -> ${k}: ${fmt(v)}`);
    if (results.phone_bridge_ms) {
      const b = results.phone_bridge_ms;
      console.log(
        `phone INVITE -> the bridge's 200 OK: ${fmt(b.answered)}\nphone INVITE -> the agent's track at the bridge: ${fmt(b.agent_track_received)}\nthe agent's job learnt of it after: ${fmt(b.agent_learnt_after)}`,
      );
    }
    for (const [k, v] of Object.entries(results.floor_post_to_step_ms)) console.log(`floor POST -> ${k}: ${fmt(v)}`);
    console.log(`-> ${file}`);
  } finally {
    if (worker) await stopWorker(worker);
    await disposeRtc();
    await stack?.stop();
    await llm.close();
  }
}

await main();
process.exit(0);
