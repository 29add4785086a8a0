// The Koa application: middleware, then every route definition mounted under /v1 (or at the root).
import Koa from 'koa';
import Router from '@koa/router';
import type { Services } from './services.ts';
import type { RouteDef } from './http/route.ts';
import { mountRoutes } from './http/mount.ts';
import { notFoundFallback, requestContext } from './http/middleware.ts';
import { buildOpenApi } from './http/openapi.ts';
import { resourceRoutes } from './modules/index.ts';
import { docsRoutes } from './modules/docs/routes.ts';

export function allRoutes(): RouteDef[] {
  let doc: object | null = null;
  const routes: RouteDef[] = [...resourceRoutes];
  routes.push(...docsRoutes(() => (doc ??= buildOpenApi(routes))));
  return routes;
}

export function createApp(services: Services, routes: RouteDef[] = allRoutes()): Koa {
  // ctx.ip is the TCP peer unless the operator says how many proxies append to X-Forwarded-For: then the entry
  // that many from the right (entries further left are whatever the client sent, and are never trusted).
  const hops = services.config.TRUST_PROXY;
  const app = new Koa({ proxy: hops > 0, maxIpsCount: hops });
  app.use(requestContext(services.log, services.metrics));
  app.use(notFoundFallback);

  const root = new Router();
  const v1 = new Router({ prefix: '/v1' });
  mountRoutes(root, routes.filter((r) => r.root), services);
  mountRoutes(v1, routes.filter((r) => !r.root), services);
  for (const router of [root, v1]) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
