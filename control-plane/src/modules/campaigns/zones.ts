// A contact's time zone and its calling windows. A contact is called only while its window is open on its own
// wall clock: the row's `timezone` if it gave one, else the zone of its number's country (libphonenumber-js
// gives the country). A country with several clocks (the US, Canada, Australia...) gives several zones, and
// the window must then be open in all of them: never earlier or later than the callee's hours, whichever zone
// they live in (docs/decisions/022-campaigns-and-do-not-call.md, Windows). Before the country, the number's longest prefix in
// libphonenumber's prefix-to-zone table narrows it: a US area code to its state's clocks, 212 to New York alone.
//
// A contact's zones are its "zone key" (the zone names joined by commas): a campaign has few distinct keys, so
// the scheduler decides which windows are open per key, not per contact.
import { classifyNumber } from '../../../../shared/destination-policy.ts';
import type { CallingWindow, Weekday } from '../../../../schemas/campaigns.ts';
import { COUNTRY_ZONES } from './country-zones.ts';
import { PREFIX_ZONE_NAMES, PREFIX_ZONES_PACKED } from './prefix-zones.ts';

/** A US number whose area code the table does not list (555, a new code) is bounded by the mainland's clocks. */
const US_MAINLAND = ['America/New_York', 'America/Chicago', 'America/Denver', 'America/Phoenix', 'America/Los_Angeles'];

const PREFIX_ZONES = new Map(
  PREFIX_ZONES_PACKED.split(' ').map((entry) => {
    const [prefix, zones] = entry.split(':') as [string, string];
    return [prefix, zones.split('.').map((i) => PREFIX_ZONE_NAMES[Number(i)]!)] as const;
  }),
);
const LONGEST_PREFIX = Math.max(...[...PREFIX_ZONES.keys()].map((p) => p.length));

/** The zones of the longest listed prefix of an E.164 number's digits, or null. */
function zonesOfPrefix(number: string): string[] | null {
  const digits = number.slice(1);
  for (let n = Math.min(LONGEST_PREFIX, digits.length); n > 0; n--) {
    const zones = PREFIX_ZONES.get(digits.slice(0, n));
    if (zones) return zones;
  }
  return null;
}

/** The canonical name of an IANA zone (as the runtime knows it), or null when it names none. */
export function canonicalZone(name: string): string | null {
  const trimmed = name.trim();
  if (!trimmed || trimmed.length > 64) return null;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: trimmed }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/** The zones of an E.164 number: its prefix's, else its country's (null when it has no country we know). */
export function zonesOfNumber(number: string, opts: { fictional?: boolean } = {}): string[] | null {
  const { country } = classifyNumber(number, { fictional: opts.fictional ?? false });
  if (!country) return null;
  const byPrefix = zonesOfPrefix(number);
  if (byPrefix) return byPrefix;
  if (country === 'US') return US_MAINLAND;
  return COUNTRY_ZONES[country] ?? null;
}

/** The zone key of a contact: its own zone, else its number's; null when neither is known. */
export function zoneKeyFor(number: string, explicitZone: string | null, opts: { fictional?: boolean } = {}): string | null {
  if (explicitZone) return explicitZone;
  const zones = zonesOfNumber(number, opts);
  return zones?.length ? zones.join(',') : null;
}

const WEEKDAY_OF: Record<string, Weekday> = { Mon: 'mon', Tue: 'tue', Wed: 'wed', Thu: 'thu', Fri: 'fri', Sat: 'sat', Sun: 'sun' };
const formats = new Map<string, Intl.DateTimeFormat>();

function formatFor(zone: string): Intl.DateTimeFormat {
  let f = formats.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    formats.set(zone, f);
  }
  return f;
}

/** The wall clock of `zone` at instant `at`: its date (YYYY-MM-DD), weekday and minute of the day. */
export function wallClock(at: Date, zone: string): { date: string; weekday: Weekday; minute: number } {
  const parts = Object.fromEntries(formatFor(zone).formatToParts(at).map((p) => [p.type, p.value]));
  return {
    date: `${parts.year}-${parts.month}-${parts.day}`,
    weekday: WEEKDAY_OF[parts.weekday!]!,
    minute: Number(parts.hour) * 60 + Number(parts.minute),
  };
}

export const minuteOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/**
 * Whether a contact of this zone key may be called at `at`: in every one of its zones, the wall clock is inside
 * a window of its weekday and the date is no holiday. A wall-clock time that a DST change skips never occurs, so
 * a window shrinks by the skipped hour that day; one that repeats occurs twice, so the window is open both
 * times (it grows by that hour).
 */
export function windowOpen(zoneKey: string, at: Date, windows: CallingWindow[], holidays: ReadonlySet<string>): boolean {
  for (const zone of zoneKey.split(',')) {
    const wall = wallClock(at, zone);
    if (holidays.has(wall.date)) return false;
    if (!windows.some((w) => w.days.includes(wall.weekday) && minuteOf(w.start) <= wall.minute && wall.minute < minuteOf(w.end))) return false;
  }
  return true;
}

/** The default calling hours: weekdays 09:00 to 18:00 on the callee's clock. */
export const DEFAULT_WINDOWS: CallingWindow[] = [{ days: ['mon', 'tue', 'wed', 'thu', 'fri'], start: '09:00', end: '18:00' }];
