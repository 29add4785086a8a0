// GET /playground: a page for developers to talk to an agent and watch each turn's latency, and its two built
// assets; GET /console: the console (calls, agents, numbers, knowledge, webhooks, settings), served the same
// way with the same headers. Public routes (the pages ask for a key themselves and keep it in memory); see
// docs/decisions/027-playground.md and "Console".
import { defineRoute, reply } from '../../http/route.ts';
import { notFound } from '../../http/errors.ts';
import type { Services } from '../../services.ts';
import { ASSETS, CONSOLE_ASSETS, CONSOLE_PAGE_FILE, NOT_BUILT_PAGE, notBuiltPage, PAGE_FILE, readBuilt } from './assets.ts';
import { policyInputs, securityHeaders } from './security.ts';

const headersFor = (services: Services) => securityHeaders(policyInputs(services.config, services.livekit.publicUrl, services.publicBaseUrl()));

export const playgroundRoutes = [
  defineRoute({
    method: 'get',
    path: '/playground',
    root: true,
    auth: 'none',
    internal: true,
    operationId: 'playgroundPage',
    tag: 'health',
    summary: 'Playground page',
    responses: { 200: { description: 'HTML page', contentType: 'text/html' } },
    handler: async ({ services }) => {
      const page = await readBuilt(PAGE_FILE, services.config.WEB_DIST_DIR);
      if (!page) services.log.warn('playground requested but web/dist has no build; run npm run build:web');
      return reply(200, page ?? NOT_BUILT_PAGE, { ...headersFor(services), 'content-type': 'text/html; charset=utf-8' });
    },
  }),
  defineRoute({
    method: 'get',
    path: '/playground/:asset',
    root: true,
    auth: 'none',
    internal: true,
    operationId: 'playgroundAsset',
    tag: 'health',
    summary: 'Playground script and stylesheet',
    responses: { 200: { description: 'JavaScript or CSS' } },
    handler: async ({ ctx, services }) => {
      const name = String((ctx.params as Record<string, string>).asset);
      const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name]! : null;
      const bytes = asset ? await readBuilt(asset.file, services.config.WEB_DIST_DIR) : null;
      if (!asset || !bytes) throw notFound('Playground file');
      return reply(200, bytes, { ...headersFor(services), 'content-type': asset.contentType });
    },
  }),
  defineRoute({
    method: 'get',
    path: '/console',
    root: true,
    auth: 'none',
    internal: true,
    operationId: 'consolePage',
    tag: 'health',
    summary: 'Console page',
    responses: { 200: { description: 'HTML page', contentType: 'text/html' } },
    handler: async ({ services }) => {
      const page = await readBuilt(CONSOLE_PAGE_FILE, services.config.WEB_DIST_DIR);
      if (!page) services.log.warn('console requested but web/dist has no build; run npm run build:web');
      return reply(200, page ?? notBuiltPage('console'), { ...headersFor(services), 'content-type': 'text/html; charset=utf-8' });
    },
  }),
  defineRoute({
    method: 'get',
    path: '/console/:asset',
    root: true,
    auth: 'none',
    internal: true,
    operationId: 'consoleAsset',
    tag: 'health',
    summary: 'Console script and stylesheet',
    responses: { 200: { description: 'JavaScript or CSS' } },
    handler: async ({ ctx, services }) => {
      const name = String((ctx.params as Record<string, string>).asset);
      const asset = Object.hasOwn(CONSOLE_ASSETS, name) ? CONSOLE_ASSETS[name]! : null;
      const bytes = asset ? await readBuilt(asset.file, services.config.WEB_DIST_DIR) : null;
      if (!asset || !bytes) throw notFound('Console file');
      return reply(200, bytes, { ...headersFor(services), 'content-type': asset.contentType });
    },
  }),
];
