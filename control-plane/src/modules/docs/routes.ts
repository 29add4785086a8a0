// The OpenAPI document and a human page rendered by Redoc, served from node_modules (no CDN).
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { defineRoute, reply } from '../../http/route.ts';
import { Type } from '../../../../schemas/common.ts';

const require = createRequire(import.meta.url);
let redocBundle: Promise<Buffer> | null = null;

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>vap API reference</title>
  <meta name="viewport" content="width=device-width, initial-scale=1">
</head>
<body>
  <redoc spec-url="/openapi.json" hide-download-button="false"></redoc>
  <script src="/docs/redoc.standalone.js"></script>
</body>
</html>`;

export function docsRoutes(getDocument: () => object) {
  return [
    defineRoute({
      method: 'get',
      path: '/openapi.json',
      root: true,
      auth: 'none',
      operationId: 'openapi',
      tag: 'health',
      summary: 'OpenAPI 3.1 document',
      responses: { 200: { description: 'This document', schema: Type.Object({}, { additionalProperties: true }) } },
      handler: async () => getDocument(),
    }),
    defineRoute({
      method: 'get',
      path: '/docs',
      root: true,
      auth: 'none',
      operationId: 'docs',
      tag: 'health',
      summary: 'API reference page',
      responses: { 200: { description: 'HTML page', contentType: 'text/html', schema: Type.String() } },
      handler: async () => reply(200, PAGE, { 'content-type': 'text/html; charset=utf-8' }),
    }),
    defineRoute({
      method: 'get',
      path: '/docs/redoc.standalone.js',
      root: true,
      auth: 'none',
      internal: true,
      operationId: 'docsBundle',
      tag: 'health',
      summary: 'Redoc bundle',
      responses: { 200: { description: 'JavaScript' } },
      handler: async () => {
        redocBundle ??= readFile(require.resolve('redoc/bundles/redoc.standalone.js'));
        return reply(200, await redocBundle, { 'content-type': 'application/javascript; charset=utf-8', 'cache-control': 'public, max-age=86400' });
      },
    }),
  ];
}
