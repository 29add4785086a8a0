// How the HTTP stand-ins (fake-anthropic, fake-cartesia, fake-s3, fake-internal-api) serve: on a free port of
// 127.0.0.1, closed at once (open keep-alive connections dropped, so close() does not wait for clients to leave).
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export async function listenOnLoopback(server: Server): Promise<{ origin: string; close(): Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
