// The playground page: sign in with a secret key or dashboard token (memory only), pick an agent, talk to it
// through the web SDK, watch the transcript, the agent's state and each turn's latency, then read the call record.
import { startCall, VapError, type VapCall } from '../sdk/index.ts';
import { api, ApiError, authorization, setCredential, type Agent, type CallRecord } from './api.ts';
import { drawChart, type TurnMetrics } from './chart.ts';

const $ = <T extends HTMLElement = HTMLElement>(id: string): T => {
  const e = document.getElementById(id);
  if (!e) throw new Error(`#${id} missing from the page`);
  return e as T;
};

const ui = {
  loading: $('loading'),
  who: $('who'),
  signin: $('signin'),
  signinForm: $<HTMLFormElement>('signin-form'),
  credential: $<HTMLInputElement>('credential'),
  signinButton: $<HTMLButtonElement>('signin-button'),
  setup: $('setup'),
  agent: $<HTMLSelectElement>('agent'),
  start: $<HTMLButtonElement>('start'),
  signout: $<HTMLButtonElement>('signout'),
  live: $('live'),
  state: $('state'),
  callId: $('call-id'),
  mute: $<HTMLButtonElement>('mute'),
  stop: $<HTMLButtonElement>('stop'),
  transcript: $<HTMLOListElement>('transcript'),
  metricsBody: $<HTMLTableSectionElement>('metrics-body'),
  chart: document.getElementById('chart') as unknown as SVGSVGElement,
  record: $('record'),
  recordTitle: $('record-title'),
  recordStatus: $('record-status'),
  recordEndReason: $('record-end-reason'),
  recordError: $('record-error'),
  recordDuration: $('record-duration'),
  recordOutcome: $('record-outcome'),
  recordSummary: $('record-summary'),
  recordAnalysis: $('record-analysis'),
  recordRecording: $('record-recording'),
  recordTranscript: $<HTMLOListElement>('record-transcript'),
  recordRefresh: $<HTMLButtonElement>('record-refresh'),
  again: $<HTMLButtonElement>('again'),
  message: $('message'),
};

let call: VapCall | null = null;
/** The mute toggle's state: pressed while the call connects, it applies as soon as the microphone is there. */
let micMuted = false;
let lastCallId: string | null = null;
let turns: TurnMetrics[] = [];
let pollTimer: ReturnType<typeof setTimeout> | null = null;
/** The call whose record is on screen (the SDK's `ended` and the stop button both lead there). */
let shownRecordFor: string | null = null;

function show(section: HTMLElement, visible: boolean): void {
  section.hidden = !visible;
}

function say(text: string): void {
  ui.message.textContent = text;
}

function describeError(err: unknown): string {
  // The SDK's VapError carries a code (key_rejected, no_microphone, permission_denied...).
  if (err instanceof Error && 'code' in err && typeof err.code === 'string' && !(err instanceof ApiError)) return `${err.message} (${err.code})`;
  if (err instanceof ApiError) {
    if (err.status === 401) return 'The key or token was rejected. Check it and sign in again.';
    if (err.status === 403) return `Not allowed: ${err.message}. The playground needs a secret API key or a dashboard token, not a publishable key.`;
    return `The server answered ${err.status}: ${err.message}`;
  }
  return err instanceof Error ? err.message : String(err);
}

// ---- sign in ----

async function signIn(value: string): Promise<void> {
  setCredential(value);
  ui.signinButton.disabled = true;
  say('');
  try {
    const list = await api<{ items: Agent[] }>('/v1/agents?limit=100');
    ui.agent.replaceChildren(...list.items.map((a) => new Option(`${a.name} (${a.id.slice(0, 8)})`, a.id)));
    ui.start.disabled = list.items.length === 0;
    if (!list.items.length) say('This organisation has no agents yet. Create one with POST /v1/agents, then sign in again.');
    // The field is emptied so the credential is kept in one place only: the variable in api.ts.
    ui.credential.value = '';
    ui.who.textContent = 'Signed in (credential held in memory only)';
    show(ui.who, true);
    show(ui.signin, false);
    show(ui.setup, true);
    ui.agent.focus();
  } catch (err) {
    setCredential(null);
    say(describeError(err));
    ui.credential.focus();
  } finally {
    ui.signinButton.disabled = false;
  }
}

function signOut(): void {
  void call?.stop();
  call = null;
  setCredential(null);
  stopPolling();
  ui.agent.replaceChildren();
  show(ui.who, false);
  show(ui.setup, false);
  show(ui.live, false);
  show(ui.record, false);
  show(ui.signin, true);
  say('Signed out. The credential is forgotten.');
  ui.credential.focus();
}

// ---- the live call ----

function setState(state: string): void {
  ui.state.textContent = state;
  ui.state.dataset.state = state;
}

function upsertTranscript(t: { id: string; role: 'user' | 'agent'; text: string; final: boolean }): void {
  let li = ui.transcript.querySelector<HTMLLIElement>(`li[data-id="${CSS.escape(t.id)}"]`);
  if (!li) {
    li = document.createElement('li');
    li.dataset.id = t.id;
    li.className = t.role;
    const who = document.createElement('span');
    who.className = 'speaker';
    who.textContent = t.role === 'agent' ? 'Agent: ' : 'You: ';
    li.append(who, document.createElement('span'));
    ui.transcript.append(li);
  }
  li.lastElementChild!.textContent = t.text;
  li.dataset.final = String(t.final);
  li.scrollIntoView({ block: 'nearest' });
}

const cell = (v: number | null): string => (typeof v === 'number' && Number.isFinite(v) ? String(Math.round(v)) : '—');

function upsertMetrics(m: TurnMetrics): void {
  const at = turns.findIndex((t) => t.turn === m.turn);
  if (at >= 0) turns[at] = { ...turns[at]!, ...m };
  else turns.push(m);
  turns.sort((a, b) => a.turn - b.turn);
  const row = turns.find((t) => t.turn === m.turn)!;
  let tr = ui.metricsBody.querySelector<HTMLTableRowElement>(`tr[data-turn="${m.turn}"]`);
  if (!tr) {
    tr = document.createElement('tr');
    tr.dataset.turn = String(m.turn);
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = String(m.turn);
    tr.append(th, ...[0, 1, 2, 3].map(() => document.createElement('td')));
    const next = [...ui.metricsBody.rows].find((r) => Number(r.dataset.turn) > m.turn);
    ui.metricsBody.insertBefore(tr, next ?? null);
  }
  const [eou, llm, tts, e2e] = [...tr.cells].slice(1);
  eou!.textContent = cell(row.eou_delay_ms);
  llm!.textContent = cell(row.llm_ttft_ms);
  tts!.textContent = cell(row.tts_ttfb_ms);
  e2e!.textContent = cell(row.e2e_latency_ms);
  drawChart(ui.chart, turns);
}

async function start(): Promise<void> {
  const agentId = ui.agent.value;
  if (!agentId) return;
  // Marks for measuring click-to-first-agent-audio from outside the page (npm run bench:browser).
  performance.clearMarks('vap:start');
  performance.clearMarks('vap:first-agent-audio');
  performance.mark('vap:start');
  ui.start.disabled = true;
  say('');
  turns = [];
  ui.transcript.replaceChildren();
  ui.metricsBody.replaceChildren();
  drawChart(ui.chart, turns);
  setState('connecting');
  ui.callId.textContent = '';
  micMuted = false;
  showMute();
  ui.mute.disabled = false;
  ui.stop.disabled = false;
  shownRecordFor = null;
  stopPolling();
  show(ui.record, false);
  show(ui.live, true);
  try {
    const c = await startCall({ apiBase: window.location.origin, authorization: authorization(), agentId, metadata: { source: 'playground' } });
    call = c;
    if (micMuted) c.mute();
    lastCallId = c.id;
    ui.callId.textContent = `(call ${c.id})`;
    setState(c.state);
    c.on('state', (s) => setState(s));
    c.on('transcript', (t) => upsertTranscript(t));
    c.on('metrics', (m) => upsertMetrics(m));
    c.on('error', (e) => say(`${e.message}${e.code ? ` (${e.code})` : ''}`));
    c.on('ended', () => void afterCall(c.id));
    c.on('agent-audio', () => {
      if (!performance.getEntriesByName('vap:first-agent-audio').length) performance.mark('vap:first-agent-audio');
    });
    ui.stop.focus();
  } catch (err) {
    setState('ended');
    say(err instanceof VapError && err.code === 'configuration_error' ? `${err.message} (${err.code})` : `The call could not start: ${describeError(err)}`);
    ui.start.disabled = false;
    // A call that was created and then failed has a record that says why: show it.
    if (err instanceof VapError && err.callId) {
      lastCallId = err.callId;
      ui.callId.textContent = `(call ${err.callId})`;
      await afterCall(err.callId);
    } else ui.start.focus();
  }
}

async function stop(): Promise<void> {
  const c = call;
  if (!c) return;
  ui.stop.disabled = true;
  // Before an agent answered, leaving the room ends nothing on the platform's side: the stop route ends the call
  // itself, so the record below shows its real, final state at once rather than `initiated`.
  const unanswered = c.state === 'connecting';
  try {
    await c.stop();
    if (unanswered) {
      await api(`/v1/calls/${encodeURIComponent(c.id)}/stop`, { method: 'POST' });
      say('Stopped before an agent answered. The call record below says what the platform saw.');
    }
  } catch (err) {
    say(`Stopping the call failed: ${describeError(err)}`);
  }
  await afterCall(c.id);
}

function showMute(): void {
  ui.mute.setAttribute('aria-pressed', String(micMuted));
  ui.mute.textContent = micMuted ? 'Unmute microphone' : 'Mute microphone';
}

function toggleMute(): void {
  micMuted = !micMuted;
  if (call) {
    if (micMuted) call.mute();
    else call.unmute();
  }
  showMute();
}

// ---- the call record ----

async function afterCall(id: string): Promise<void> {
  if (shownRecordFor === id) return;
  shownRecordFor = id;
  call = null;
  setState('ended');
  ui.mute.disabled = true;
  ui.stop.disabled = true;
  ui.start.disabled = false;
  show(ui.record, true);
  ui.recordTitle.focus();
  await loadRecord(id, 0);
}

function stopPolling(): void {
  if (pollTimer) clearTimeout(pollTimer);
  pollTimer = null;
}

/** The record fills in after the call: the worker's report, then the analysis and the recording. Polled briefly. */
async function loadRecord(id: string, attempt: number): Promise<void> {
  stopPolling();
  let rec: CallRecord;
  try {
    rec = await api<CallRecord>(`/v1/calls/${encodeURIComponent(id)}`);
  } catch (err) {
    say(`Could not load the call record: ${describeError(err)}`);
    return;
  }
  renderRecord(rec);
  // A failed call never connected: nothing more will come (no conversation, no analysis).
  if (rec.status === 'failed') return;
  const settled = rec.status === 'completed';
  const analysing = rec.analysis.status === 'pending' || rec.analysis.status === 'running';
  if ((!settled || analysing || !rec.messages?.length) && attempt < 30) {
    pollTimer = setTimeout(() => void loadRecord(id, attempt + 1), 2000);
  }
}

function text(v: string | number | null | undefined): string {
  return v === null || v === undefined || v === '' ? '—' : String(v);
}

function renderRecord(rec: CallRecord): void {
  ui.recordStatus.textContent = rec.status;
  ui.recordEndReason.textContent = text(rec.end_reason);
  ui.recordError.textContent = rec.error ? `${rec.error.message} (${rec.error.code})` : '—';
  ui.recordDuration.textContent = rec.duration_seconds === null ? '—' : `${rec.duration_seconds} s`;
  ui.recordOutcome.textContent = text(rec.outcome ?? rec.analysis.outcome);
  ui.recordSummary.textContent = text(rec.ai_summary ?? rec.analysis.summary);
  ui.recordAnalysis.textContent = `Analysis: ${rec.analysis.status}${rec.analysis.method ? ` (${rec.analysis.method})` : ''}${rec.analysis.error ? `: ${rec.analysis.error}` : ''}`;
  const existing = ui.recordRecording.querySelector('audio');
  if (rec.recording_url && !existing) {
    const audio = document.createElement('audio');
    audio.controls = true;
    audio.preload = 'none';
    audio.src = rec.recording_url;
    audio.setAttribute('aria-label', 'Call recording');
    ui.recordRecording.replaceChildren(audio);
  }
  ui.recordTranscript.replaceChildren(
    ...(rec.messages ?? []).map((m) => {
      const li = document.createElement('li');
      li.className = m.role;
      const who = document.createElement('span');
      who.className = 'speaker';
      who.textContent = m.role === 'agent' ? 'Agent: ' : 'Caller: ';
      li.append(who, document.createTextNode(m.content));
      return li;
    }),
  );
}

// ---- wiring ----

ui.signinForm.addEventListener('submit', (ev) => {
  ev.preventDefault();
  const value = ui.credential.value.trim();
  if (!value) {
    say('Enter a secret API key or a dashboard token.');
    ui.credential.focus();
    return;
  }
  void signIn(value);
});
ui.signout.addEventListener('click', signOut);
ui.start.addEventListener('click', () => void start());
ui.stop.addEventListener('click', () => void stop());
ui.mute.addEventListener('click', toggleMute);
ui.recordRefresh.addEventListener('click', () => {
  if (lastCallId) void loadRecord(lastCallId, 0);
});
ui.again.addEventListener('click', () => {
  show(ui.record, false);
  show(ui.live, false);
  ui.start.focus();
});

drawChart(ui.chart, turns);
show(ui.loading, false);
show(ui.signin, true);
