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

