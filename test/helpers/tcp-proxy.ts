import net from 'node:net';

export interface TcpProxy {
  /** host:port to connect to instead of the upstream. */
  readonly host: string;
  readonly port: number;
  /** Connections piped so far. */
  readonly connections: number;
  /** The network goes: every connection through it is cut, and new ones are cut as they come (the upstream is left alone). */
  cut(): void;
  /** The network is back: connections are piped to the upstream again. */
  restore(): void;
  close(): Promise<void>;
}

/**
 * A TCP proxy on 127.0.0.1 in front of a real server (a database), that a test can cut and
 * restore: the way to make a real server unreachable for one client and then reachable again,
 * without stopping it for everyone else.
 */
export async function startTcpProxy(upstream: { host: string; port: number }): Promise<TcpProxy> {
  const open = new Set<net.Socket>();
  let cut = false;
  let connections = 0;
  const server = net.createServer((client) => {
    if (cut) return void client.destroy();
    connections++;
    const remote = net.connect(upstream.port, upstream.host);
    open.add(client).add(remote);
    const end = () => {
      client.destroy();
      remote.destroy();
      open.delete(client);
      open.delete(remote);
    };
    client.on('error', end).on('close', end);
    remote.on('error', end).on('close', end);
    client.pipe(remote).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    host: '127.0.0.1',
    port,
    get connections() {
      return connections;
    },
    cut() {
      cut = true;
      for (const socket of open) socket.destroy();
      open.clear();
    },
    restore() {
      cut = false;
    },
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
