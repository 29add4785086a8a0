// The live view of a call in progress (docs/console.md, "A call in progress"): its transcript as it goes, Listen
// (a hidden listener in the call's room, both sides played in the page), say and whisper, mute and unmute the
// agent, take over with the browser's microphone and hand back, and end. The actions are the API's
// (POST /v1/calls/{id}/listen and /control); the page only shows what the API answers, errors included.
//
// The transcript comes from the room: the API gives a call's `messages` only once it has ended, so the words are
// read from the transcription streams the agent publishes to everyone in the room (`lk.transcription`, what the web
// SDK reads), through the page's listener (or takeover) connection. The words being spoken show as they come; each
// line enters the transcript (aria-live) when it is final. The call's record is read every POLL_MS for its
// supervision[] (the actions, whether the agent is muted or taken over) and its status: when the call ends, the page
// becomes the completed call's page.
import { api, ApiError } from '../../playground/api.ts';
import { confirmDialog, describe, field } from '../app.ts';
import { fmtDate, h, table } from '../dom.ts';
import type { Call } from './call-types.ts';
import { joinCallRoom, type Joined, type Words } from './call-live-room.ts';

const POLL_MS = 1500;

export interface SupervisionEntry {
  seq: number;
  action: string;
  actor_type: 'api_key' | 'user';
  actor_id: string;
  at: string;
  details: Record<string, unknown>;
}
export type LiveCall = Call & { supervision?: SupervisionEntry[] };

interface RoomGrant {
  server_url: string;
  participant_token: string;
  identity: string;
  expires_at: string;
}
interface ControlResult {
  call_id: string;
  supervision: SupervisionEntry;
  takeover?: RoomGrant;
}
type ControlBody =
  | { action: 'say'; text: string; when: 'now' | 'after_current' }
  | { action: 'whisper'; text: string }
  | { action: 'mute_agent' | 'unmute_agent' | 'takeover' | 'hand_back' | 'end' };

const ACTION_NAMES: Record<string, string> = {
  listen: 'Listened',
  say: 'Said',
  whisper: 'Whispered',
  mute_agent: 'Muted the agent',
  unmute_agent: 'Unmuted the agent',
  takeover: 'Took over',
  hand_back: 'Handed back',
  transfer: 'Transferred',
  end: 'Ended the call',
};

/** Whether the agent is muted and whether a person has the call, from the record's supervision[] in order. */
export function supervisionState(entries: SupervisionEntry[]): { muted: boolean; takenOver: boolean } {
  let muted = false;
  let takenOver = false;
  for (const e of entries) {
    if (e.action === 'mute_agent') muted = true;
    else if (e.action === 'unmute_agent') muted = false;
    else if (e.action === 'takeover') takenOver = true;
    else if (e.action === 'hand_back') takenOver = false;
  }
  return { muted, takenOver };
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });

/**
 * The live view for `first`, an in-progress call. It reads the call until the call ends, then calls `onEnded`
 * (the page renders again, as a completed call). Navigating away (`signal`) leaves the call's room and stops.
 */
export function liveView(first: LiveCall, opts: { signal: AbortSignal; onEnded: () => void }): HTMLElement {
  const { signal } = opts;
  const id = first.id;
  let busy = false;
  let listener: Joined | null = null;
  let takeover: Joined | null = null;
  let state = supervisionState(first.supervision ?? []);

  const button = (label: string, cls = 'secondary') => h('button', { type: 'button', class: cls }, label);
  const listenBtn = button('Listen');
  const takeBtn = button('Take over');
  const muteBtn = button('Mute agent');
  const endBtn = button('End call', 'danger');
  const text = h('textarea', { rows: 2, maxlength: 4000, autocomplete: 'off' });
  const now = h('input', { type: 'checkbox', id: 'live-now' });
  const sayBtn = h('button', { type: 'submit' }, 'Say');
  const whisperBtn = button('Whisper');
  const status = h('p', { role: 'status', class: 'live-status' }, 'Not listening.');
  const alert = h('div', { role: 'alert', class: 'live-alert' });
  const audio = h('div', { class: 'live-audio' });
  const transcript = h('ol', { class: 'transcript', 'aria-live': 'polite', 'aria-labelledby': 'live-transcript', tabindex: 0 });
  const empty = h('p', { class: 'note' }, 'Listen to follow what is said, as it is said. The whole conversation is on this page once the call has ended.');
  const words = h('ol', { class: 'transcript live-words', 'aria-labelledby': 'live-words' });
  const actions = h('div');
  /** The segments being spoken, by id; a final one moves to the transcript. */
  const speaking = new Map<string, HTMLLIElement>();
  const done = new Set<string>();

  const refresh = () => {
    const holding = takeover !== null || state.takenOver;
    listenBtn.textContent = listener ? 'Stop listening' : 'Listen';
    takeBtn.textContent = holding ? 'Hand back' : 'Take over';
    muteBtn.textContent = state.muted ? 'Unmute agent' : 'Mute agent';
    // While this page holds the call it hears both sides through the takeover's own connection.
    listenBtn.disabled = busy || takeover !== null;
    for (const b of [takeBtn, muteBtn, endBtn, sayBtn, whisperBtn]) b.disabled = busy;
  };

  /** Runs one action: the others wait until it is done, and its failure is shown in words. */
  const act = (fn: () => Promise<void>) => {
    if (busy) return;
    busy = true;
    alert.replaceChildren();
    refresh();
    void fn()
      .catch((err: unknown) => {
        if (!signal.aborted) alert.replaceChildren(h('p', { class: 'problem' }, describe(err, 'This call')));
      })
      .finally(() => {
        busy = false;
        refresh();
      });
  };
  const control = (body: ControlBody) => api<ControlResult>(`/v1/calls/${encodeURIComponent(id)}/control`, { method: 'POST', body });

  const line = (w: Words) => h('li', { class: w.role }, h('span', { class: 'speaker' }, w.role === 'agent' ? 'Agent: ' : 'Caller: '), h('span', null, w.text));
  const onWords = (w: Words) => {
    if (done.has(w.id)) return;
    const open = speaking.get(w.id);
    if (w.final) {
      // Whole lines only in the announced transcript: a screen reader hears each line once, not each word.
      open?.remove();
      speaking.delete(w.id);
      done.add(w.id);
      transcript.append(line(w));
      empty.hidden = true;
      return;
    }
    if (open) open.lastElementChild!.textContent = w.text;
    else {
      const li = line(w);
      li.dataset.final = 'false';
      speaking.set(w.id, li);
      words.append(li);
    }
  };
  const onLeft = () => {
    listener = null;
    takeover = null;
    refresh();
  };
  const join = async (grant: RoomGrant, microphone: boolean): Promise<Joined> => {
    const joined = await joinCallRoom(grant.server_url, grant.participant_token, { audio, onWords, onLeft, microphone });
    if (signal.aborted) {
      await joined.leave();
      throw new Error('navigated away');
    }
    return joined;
  };
  const leaveAll = async () => {
    const rooms = [listener, takeover];
    listener = takeover = null;
    for (const r of rooms) await r?.leave().catch(() => undefined);
  };
  signal.addEventListener('abort', () => void leaveAll(), { once: true });

  listenBtn.addEventListener('click', () =>
    act(async () => {
      if (listener) {
        const l = listener;
        listener = null;
        await l.leave();
        status.textContent = 'Not listening.';
        return;
      }
      const grant = await api<RoomGrant>(`/v1/calls/${encodeURIComponent(id)}/listen`, { method: 'POST' });
      listener = await join(grant, false);
      status.textContent = 'Listening: you hear the caller and the agent. The caller is not told.';
    }),
  );
  takeBtn.addEventListener('click', () =>
    act(async () => {
      if (takeover || state.takenOver) {
        // A 409 says no takeover is active (someone handed back already): the page leaves the room all the same.
        const refused = await control({ action: 'hand_back' }).then(
          () => null,
          (err: unknown) => {
            if (err instanceof ApiError && err.status === 409) return err;
            throw err;
          },
        );
        const t = takeover;
        takeover = null;
        state = { ...state, takenOver: false };
        await t?.leave();
        status.textContent = 'The agent has the call again.';
        if (refused) throw refused;
        return;
      }
      const res = await control({ action: 'takeover' });
      if (!res.takeover) throw new Error('The server answered the takeover without a token to join the call.');
      // One connection hears both sides: the takeover's replaces the listener's.
      const l = listener;
      listener = null;
      await l?.leave();
      state = { ...state, takenOver: true };
      try {
        takeover = await join(res.takeover, true);
      } catch (err) {
        // No microphone (refused, none): the call goes back to the agent rather than to nobody.
        await control({ action: 'hand_back' }).catch(() => undefined);
        state = { ...state, takenOver: false };
        throw new Error(`The microphone could not be used (${describe(err)}); the agent has the call again.`, { cause: err });
      }
      status.textContent = 'You have the call: the caller hears your microphone, and the agent is quiet.';
    }),
  );
  muteBtn.addEventListener('click', () =>
    act(async () => {
      const muting = !state.muted;
      await control({ action: muting ? 'mute_agent' : 'unmute_agent' });
      state = { ...state, muted: muting };
      status.textContent = muting ? 'The agent is muted: it listens and does not speak.' : 'The agent speaks again.';
    }),
  );
  endBtn.addEventListener('click', () =>
    act(async () => {
      const ok = await confirmDialog('End this call?', 'The caller is disconnected now. This cannot be undone.', 'End the call');
      if (!ok) return;
      await control({ action: 'end' });
      status.textContent = 'The call is ending.';
    }),
  );
  const send = (action: 'say' | 'whisper') =>
    act(async () => {
      const body: ControlBody = action === 'say' ? { action, text: text.value, when: now.checked ? 'now' : 'after_current' } : { action, text: text.value };
      await control(body);
      text.value = '';
      status.textContent = action === 'say' ? 'Sent: the agent says it.' : 'Sent: only the agent’s model gets it.';
    });
  const form = h(
    'form',
    { class: 'live-message', novalidate: true },
    field('live-text', 'Message for the call', text, 'Say: the agent says it to the caller. Whisper: only the agent’s model gets it, as an instruction.'),
    h('div', { class: 'check' }, now, h('label', { for: 'live-now' }, 'Say it now (interrupt the agent)')),
    h('div', { class: 'buttons' }, sayBtn, whisperBtn),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    send('say');
  });
  whisperBtn.addEventListener('click', () => send('whisper'));

  /** The record as read: the actions on the call, and the state they leave. */
  const update = (call: LiveCall) => {
    const entries = call.supervision ?? [];
    state = supervisionState(entries);
    if (actions.dataset.count !== String(entries.length)) {
      actions.dataset.count = String(entries.length);
      actions.replaceChildren(
        table(
          'Actions on this call',
          ['When', 'Action', 'By', 'Text'],
          entries.map((e) => [
            fmtDate(e.at),
            ACTION_NAMES[e.action] ?? e.action,
            `${e.actor_type === 'user' ? 'User' : 'API key'} ${e.actor_id.slice(0, 8)}`,
            typeof e.details.text === 'string' ? e.details.text : '—',
          ]),
          { captionHidden: true },
        ),
      );
    }
    refresh();
  };

  const poll = async () => {
    while (!signal.aborted) {
      await sleep(POLL_MS, signal);
      if (signal.aborted) return;
      let call: LiveCall;
      try {
        call = await api<LiveCall>(`/v1/calls/${encodeURIComponent(id)}`, { signal });
      } catch (err) {
        if (!signal.aborted) status.textContent = `The call's record could not be read (${describe(err, 'This call')}); trying again.`;
        continue;
      }
      if (call.status !== 'in_progress') {
        await leaveAll();
        if (!signal.aborted) opts.onEnded();
        return;
      }
      update(call);
    }
  };

  const section = h(
    'section',
    { class: 'live', 'aria-labelledby': 'call-live' },
    h('h2', { id: 'call-live' }, 'Live'),
    h('p', { class: 'note' }, `In progress since ${fmtDate(first.started_at)}. This page follows the call until it ends.`),
    h('div', { class: 'buttons' }, listenBtn, takeBtn, muteBtn, endBtn),
    status,
    alert,
    audio,
    form,
    h('h3', { id: 'live-transcript' }, 'Transcript'),
    transcript,
    empty,
    h('h3', { id: 'live-words' }, 'Being said now'),
    words,
    h('h3', null, 'Actions on this call'),
    actions,
  );
  update(first);
  void poll();
  return section;
}
