// The SIP bridge's side of each phone call's start, from its own log (livekit-sip at info level writes one JSON line
// per step): when it answered the INVITE (the 200 OK, sent once it has asked for the agent's track) and when the
// agent's track reached it. Set beside the agent's timeline, they say how long the agent's job took to learn that
// the bridge was listening (its `audio_subscribed`), which is when its greeting may start.

export interface BridgeTimes {
  /** Wall-clock ms of the bridge's "Accepting the call" (it sends the 200 OK). */
  answeredAt?: number;
  /** Wall-clock ms of the first track the bridge subscribed to in the caller's room: the agent's. */
  subscribedAt?: number;
}

/** The bridge's times for each call, by the caller's number (each call of a run dials from its own). */
export function bridgeTimesByCaller(log: string): Map<string, BridgeTimes> {
  const out = new Map<string, BridgeTimes>();
  for (const line of log.split('\n')) {
    if (!line.includes('"Accepting the call"') && !line.includes('"track subscribed"')) continue;
    let j: { msg?: string; ts?: number; fromUser?: string };
    try {
      j = JSON.parse(line) as typeof j;
    } catch {
      continue;
    }
    if (typeof j.ts !== 'number' || !j.fromUser) continue;
    const at = j.ts * 1000;
    const times = out.get(j.fromUser) ?? {};
    if (j.msg === 'Accepting the call' && times.answeredAt === undefined) times.answeredAt = at;
    if (j.msg === 'track subscribed' && times.subscribedAt === undefined) times.subscribedAt = at;
    out.set(j.fromUser, times);
  }
  return out;
}
