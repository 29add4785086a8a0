// Which call a job serves: `{"call_id": "..."}` in the dispatch metadata, else the room metadata.
/** `{"call_id": "..."}` in dispatch or room metadata. */
export function callIdFromMetadata(...sources: (string | undefined | null)[]): string | null {
  for (const raw of sources) {
    if (!raw) continue;
    try {
      const v = JSON.parse(raw) as { call_id?: unknown };
      if (typeof v?.call_id === 'string' && v.call_id) return v.call_id;
    } catch {
      // not JSON: ignore
    }
  }
  return null;
}


/**
 * The call's dispatch credential, from the dispatch (job) metadata only: its `ticket`, which opens the call's config
 * once (the config brings the call's capability), or a `capability` from an older control plane. Room metadata is
 * readable by every participant, so the control plane never puts either there, and one found there is not trusted.
 */
export function capabilityFromJobMetadata(raw: string | undefined | null): string | null {
  if (!raw) return null;
  try {
    const v = JSON.parse(raw) as { capability?: unknown; ticket?: unknown };
    if (typeof v?.ticket === 'string' && v.ticket) return v.ticket;
    return typeof v?.capability === 'string' && v.capability ? v.capability : null;
  } catch {
    return null;
  }
}
