// Chooses the carrier adapter from CARRIER (simulated | twilio | telnyx). One adapter per process, built on
// first use; every phone-number route, job and call path goes through `carrierFor(services)`.
import type { Services } from '../../../services.ts';
import { ConfigError, type Config } from '../../../config.ts';
import type { Sql } from 'postgres';
import type { Registry } from 'prom-client';
import type { Logger } from '../../../../../shared/logger.ts';
import type { CarrierAdapter, SipIngress } from './types.ts';
import { createSimulatedCarrier } from './simulated.ts';
import { twilioCarrierFromConfig } from './twilio.ts';
import { telnyxCarrierFromConfig } from './telnyx.ts';

export * from './types.ts';

const list = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/**
 * Builds the configured adapter (credentials were checked when the configuration loaded). `deps` gives the
 * Twilio and Telnyx adapters a logger and the metrics registry (vap_carrier_request_duration_seconds).
 */
export function createCarrier(config: Config, sql: Sql, deps: { logger?: Logger; registry?: Registry } = {}): CarrierAdapter {
  if (config.CARRIER === 'simulated') {
    return createSimulatedCarrier({
      sql,
      sourceAddresses: list(config.SIMULATED_CARRIER_SOURCE_ADDRESSES),
      terminationAddress: config.SIMULATED_CARRIER_TERMINATION_ADDRESS,
      inboundRateCents: config.SIMULATED_CARRIER_INBOUND_RATE_CENTS,
      outboundRateCents: config.SIMULATED_CARRIER_OUTBOUND_RATE_CENTS,
    });
  }
  if (config.CARRIER === 'twilio') return twilioCarrierFromConfig(config, deps);
  if (config.CARRIER === 'telnyx') return telnyxCarrierFromConfig(config, deps);
  throw new ConfigError(`invalid configuration: CARRIER=${String(config.CARRIER)} has no adapter`);
}

const cache = new WeakMap<Services, CarrierAdapter>();

/** The process's carrier adapter. */
export function carrierFor(services: Services): CarrierAdapter {
  let c = cache.get(services);
  if (!c) {
    c = createCarrier(services.config, services.sql, { logger: services.log, registry: services.metrics.registry });
    cache.set(services, c);
  }
  return c;
}

/** Tests swap in an adapter (say, one pointed at a local stand-in of a carrier API). */
export function setCarrier(services: Services, carrier: CarrierAdapter): void {
  cache.set(services, carrier);
}

export const ingressOf = (config: Config): SipIngress => ({ address: config.SIP_INGRESS_ADDRESS, transport: config.SIP_INGRESS_TRANSPORT });
