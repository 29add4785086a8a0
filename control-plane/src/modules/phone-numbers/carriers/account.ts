// Which carrier account an inbound INVITE came from (issue 50, item 9). The carrier's signalling ranges, which
// the inbound trunks allow, are shared by every customer of the carrier: any Twilio account can <Dial><Sip> to
// the platform's SIP host from Twilio's own addresses. So each number's inbound trunk maps the carrier's
// account header to a participant attribute, and the control plane opens a call only when it names the
// platform's own account. Twilio names the account in X-Twilio-AccountSid; for another carrier the operator
// names a header its connection sends (CARRIER_ACCOUNT_HEADER / CARRIER_ACCOUNT_VALUE).
import type { Config } from '../../../config.ts';

/** The participant attribute the inbound trunk writes the account header to. */
export const CARRIER_ACCOUNT_ATTRIBUTE = 'vap.carrier_account';

export interface AccountCheck {
  header: string;
  value: string;
}

type AccountConfig = Pick<Config, 'CARRIER' | 'CARRIER_ACCOUNT_HEADER' | 'CARRIER_ACCOUNT_VALUE' | 'TWILIO_ACCOUNT_SID'>;

/** The header and value every inbound INVITE must carry, or null when the carrier's account cannot be checked. */
export function inboundAccountCheck(config: AccountConfig): AccountCheck | null {
  if (config.CARRIER_ACCOUNT_HEADER && config.CARRIER_ACCOUNT_VALUE) return { header: config.CARRIER_ACCOUNT_HEADER, value: config.CARRIER_ACCOUNT_VALUE };
  if (config.CARRIER === 'twilio' && config.TWILIO_ACCOUNT_SID) return { header: 'X-Twilio-AccountSid', value: config.TWILIO_ACCOUNT_SID };
  return null;
}

/** The inbound trunk's headers-to-attributes mapping for the check. */
export const accountHeaderMapping = (check: AccountCheck | null): Record<string, string> => (check ? { [check.header]: CARRIER_ACCOUNT_ATTRIBUTE } : {});

/** Whether the leg's account (the attribute the bridge set from the header) is the platform's. */
export function accountMatches(check: AccountCheck | null, account: string | null | undefined): boolean {
  if (!check) return true;
  return typeof account === 'string' && account.trim() === check.value;
}
