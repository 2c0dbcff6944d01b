// (Long: the policy's list syntax, its ranges and the connect-time check each need their cases.)
// The outbound policy: its list, what it lets through at spawn (checkUrl) and when connecting
// (checkAddress), and postJson's connect-time check through a real server on 127.0.0.1 with a stub
// resolver. No request ever goes to a non-loopback address: refused ones are refused before
// connecting, and that is what these tests check.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import { InvalidInputError, OutboundNotAllowedError, StepError } from '../../src/core/errors.js';
import { parseOutboundPolicy, type OutboundPolicy } from '../../src/core/outbound.js';
import { postJson, type ResolvedAddress, type Resolver } from '../../src/core/outbound-fetch.js';

const UNSET = parseOutboundPolicy(undefined);

/** The refusal's reason, or 'allowed'. */
function verdict(policy: OutboundPolicy, url: string): string {
  try {
    policy.checkUrl(url);
    return 'allowed';
  } catch (err) {
    expect(err).toBeInstanceOf(OutboundNotAllowedError);
    return (err as OutboundNotAllowedError).reason;
  }
}

const allows = (policy: OutboundPolicy, url: string) => verdict(policy, url) === 'allowed';

describe('parseOutboundPolicy', () => {
  test('reads hosts, wildcards, addresses and blocks, in their canonical forms', () => {
    const policy = parseOutboundPolicy(' Hooks.Example.com , *.example.org,10.0.0.0/8, fd00::/8 ,[::1],::ffff:192.0.2.1,bücher.de.');
    expect(String(policy)).toBe('hooks.example.com,*.example.org,10.0.0.0/8,fd00::/8,::1,192.0.2.1,xn--bcher-kva.de');
    expect(String(UNSET)).toBe('unset');
  });

  test.each([
    ['', 'The outbound allow-list entry "" is empty (entries are separated by single commas).'],
    ['a.com,,b.com', 'The outbound allow-list entry "" is empty (entries are separated by single commas).'],
    ['https://a.com', 'The outbound allow-list entry "https://a.com" is a URL; list its host only.'],
    ['a.com:8080', 'The outbound allow-list entry "a.com:8080" has a port; entries are hosts (any port).'],
    ['10.0.0.1/8', 'The outbound allow-list entry "10.0.0.1/8" has bits set after its prefix (the block is 10.0.0.0/8).'],
    ['fd00::1/8', 'The outbound allow-list entry "fd00::1/8" has bits set after its prefix (the block is fd00::/8).'],
    ['10.0.0.0/33', 'The outbound allow-list entry "10.0.0.0/33" is not a CIDR block (an IPv4 or IPv6 address, a slash and a prefix length).'],
    ['::/129', 'The outbound allow-list entry "::/129" is not a CIDR block (an IPv4 or IPv6 address, a slash and a prefix length).'],
    ['example.com/8', 'The outbound allow-list entry "example.com/8" is not a CIDR block (an IPv4 or IPv6 address, a slash and a prefix length).'],
    ['*', 'The outbound allow-list entry "*" would allow every host; leave the list unset for that.'],
    ['10.0.0', 'The outbound allow-list entry "10.0.0" ends in a number, so it is not a hostname, nor a whole IP address.'],
    ['a..b', 'The outbound allow-list entry "a..b" is neither a hostname, a *.domain wildcard, an IP address nor a CIDR block.'],
    ['-a.com', 'The outbound allow-list entry "-a.com" is neither a hostname, a *.domain wildcard, an IP address nor a CIDR block.'],
    ['*.', 'The outbound allow-list entry "*." is neither a hostname, a *.domain wildcard, an IP address nor a CIDR block.'],
  ])('refuses %j with a sentence', (list, message) => {
    expect(() => parseOutboundPolicy(list)).toThrow(InvalidInputError);
    expect(() => parseOutboundPolicy(list)).toThrow(message);
  });
});

describe('checkUrl: the check at spawn', () => {
  test('a host entry matches that host only, whatever its case or final dot', () => {
    const policy = parseOutboundPolicy('hooks.example.com');
    expect(allows(policy, 'https://hooks.example.com/x?y=1')).toBe(true);
    expect(allows(policy, 'http://HOOKS.example.com.:8080/')).toBe(true);
    expect(verdict(policy, 'https://a.hooks.example.com/')).toBe('the host is not in the allow-list');
    expect(verdict(policy, 'https://example.com/')).toBe('the host is not in the allow-list');
    expect(verdict(policy, 'https://hooks.example.com.evil.test/')).toBe('the host is not in the allow-list');
  });

  test('a wildcard matches every subdomain, at any depth, and not the apex', () => {
    const policy = parseOutboundPolicy('*.example.com');
    expect(allows(policy, 'https://a.example.com/')).toBe(true);
    expect(allows(policy, 'https://a.b.example.com/')).toBe(true);
    expect(allows(policy, 'https://example.com/')).toBe(false);
    expect(allows(policy, 'https://badexample.com/')).toBe(false);
  });

  test('an IP literal is matched against the address and block entries, IPv4 and IPv6', () => {
    const policy = parseOutboundPolicy('10.0.0.0/8,192.0.2.7,fd00::/8,2001:db8::1');
    expect(allows(policy, 'http://10.255.0.1/')).toBe(true);
    expect(allows(policy, 'http://192.0.2.7:9000/')).toBe(true);
    expect(allows(policy, 'http://[fd12:3456::1]/')).toBe(true);
    expect(allows(policy, 'http://[2001:db8:0::1]/')).toBe(true);
    expect(verdict(policy, 'http://11.0.0.1/')).toBe('the address is not in the allow-list');
    expect(verdict(policy, 'http://192.0.2.8/')).toBe('the address is not in the allow-list');
    expect(verdict(policy, 'http://[fe00::1]/')).toBe('the address is not in the allow-list');
    // Names are not resolved at spawn: a block entry does not admit a name.
    expect(verdict(policy, 'http://internal.test/')).toBe('the host is not in the allow-list');
  });

  test('an IPv4-mapped IPv6 address is checked as the IPv4 address it reaches', () => {
    const policy = parseOutboundPolicy('10.0.0.0/8');
    expect(allows(policy, 'http://[::ffff:10.1.2.3]/')).toBe(true);
    expect(allows(policy, 'http://[::ffff:a01:203]/')).toBe(true);
    expect(allows(policy, 'http://[::ffff:11.1.2.3]/')).toBe(false);
    expect(allows(parseOutboundPolicy('::ffff:10.0.0.0/104'), 'http://10.9.9.9/')).toBe(true);
  });

  test('unset, it allows any host and address but the link-local and cloud-metadata ranges', () => {
    for (const url of ['http://127.0.0.1:3000/', 'http://[::1]/', 'http://10.0.0.1/', 'https://hooks.example.com/', 'http://localhost/']) {
      expect(verdict(UNSET, url), url).toBe('allowed');
    }
    const refused: [string, string][] = [
      ['http://169.254.169.254/latest/meta-data/', 'it is in 169.254.0.0/16'],
      ['http://169.254.0.1/', 'it is in 169.254.0.0/16'],
      // The URL parser reads other spellings of an IPv4 address as that address.
      ['http://0xa9fea9fe/', 'it is in 169.254.0.0/16'],
      ['http://2852039166/', 'it is in 169.254.0.0/16'],
      ['http://[::ffff:169.254.169.254]/', 'it maps to 169.254.169.254, which is in 169.254.0.0/16'],
      ['http://[fe80::1]/', 'it is in fe80::/10'],
      ['http://[febf:ffff::1]/', 'it is in fe80::/10'],
      ['http://[fd00:ec2::254]/', 'it is in fd00:ec2::254/128'],
    ];
    for (const [url, reason] of refused) {
      expect(verdict(UNSET, url), url).toBe(`${reason} (link-local and cloud-metadata addresses are refused unless the allow-list names them)`);
    }
    expect(allows(UNSET, 'http://169.255.0.1/')).toBe(true);
    expect(allows(UNSET, 'http://[fec0::1]/')).toBe(true);
  });

  test('a refused range opens only to an entry inside it, not to a wider block', () => {
    const one = parseOutboundPolicy('169.254.169.254');
    expect(allows(one, 'http://169.254.169.254/')).toBe(true);
    expect(allows(one, 'http://[::ffff:169.254.169.254]/')).toBe(true);
    expect(allows(one, 'http://169.254.169.253/')).toBe(false);
    expect(allows(parseOutboundPolicy('169.254.0.0/16'), 'http://169.254.3.4/')).toBe(true);
    expect(allows(parseOutboundPolicy('::ffff:169.254.169.254'), 'http://169.254.169.254/')).toBe(true);
    expect(allows(parseOutboundPolicy('fe80::/10'), 'http://[fe80::1]/')).toBe(true);
    for (const wide of ['0.0.0.0/0', '169.0.0.0/8', '::/0', '::ffff:0:0/96']) {
      expect(allows(parseOutboundPolicy(wide), 'http://169.254.169.254/'), wide).toBe(false);
      expect(allows(parseOutboundPolicy(wide), 'http://[::ffff:169.254.169.254]/'), wide).toBe(false);
    }
    expect(allows(parseOutboundPolicy('0.0.0.0/0'), 'http://8.8.8.8/')).toBe(true);
  });

  test('only http and https URLs pass; the error names the host and why, with code outbound_not_allowed', () => {
    expect(verdict(UNSET, 'ftp://example.com/')).toBe('only http and https are allowed, not ftp');
    expect(verdict(UNSET, 'file:///etc/passwd')).toBe('only http and https are allowed, not file');
    expect(() => UNSET.checkUrl('file:///etc/passwd')).toThrow('Outbound requests to "file:///etc/passwd" are not allowed');
    expect(verdict(UNSET, 'not a url')).toBe('it is not a URL');
    expect(UNSET.checkUrl('https://example.com/a').pathname).toBe('/a');
    let refusal: unknown;
    try {
      parseOutboundPolicy('hooks.example.com').checkUrl('https://other.example.com/');
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toMatchObject({
      code: 'outbound_not_allowed',
      host: 'other.example.com',
      message: 'Outbound requests to "other.example.com" are not allowed: the host is not in the allow-list.',
    });
  });
});

describe('checkAddress: the check when connecting', () => {
  test('a listed name may resolve anywhere but the refused ranges', () => {
    const policy = parseOutboundPolicy('hooks.example.com');
    expect(() => policy.checkAddress('hooks.example.com', '10.0.0.5')).not.toThrow();
    expect(() => policy.checkAddress('hooks.example.com', '169.254.169.254')).toThrow(
      'Outbound requests to "hooks.example.com" are not allowed: it resolves to 169.254.169.254, which is in 169.254.0.0/16',
    );
    expect(() => policy.checkAddress('hooks.example.com', 'fe80::1%eth0')).toThrow('which is in fe80::/10');
    expect(() => policy.checkAddress('other.example.com', '10.0.0.5')).toThrow('the host is not in the allow-list');
  });

  test('unset, any name may resolve anywhere but the refused ranges', () => {
    expect(() => UNSET.checkAddress('anything.test', '127.0.0.1')).not.toThrow();
    expect(() => UNSET.checkAddress('anything.test', '::ffff:169.254.169.254')).toThrow('which is in 169.254.0.0/16');
    expect(() => UNSET.checkAddress('anything.test', 'not-an-ip')).toThrow('"not-an-ip" is not an IP address');
  });
});

// --- postJson through a real server on 127.0.0.1 ------------------------------------------------

interface Local {
  port: number;
  requests: { host: string | undefined; headers: IncomingMessage['headers']; body: string }[];
  connections: number;
  /** The server's side of each connection, in the order they came. */
  sockets: Socket[];
}

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

const answerOk = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');

/** A server on 127.0.0.1 answering with `answer` (default: 200 JSON), recording what reached it. */
async function startLocal(answer: (res: ServerResponse) => void = answerOk, keepAliveTimeoutMs?: number): Promise<Local> {
  const local: Local = { port: 0, requests: [], connections: 0, sockets: [] };
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      local.requests.push({ host: req.headers.host, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      answer(res);
    });
  });
  if (keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = keepAliveTimeoutMs;
  server.on('connection', (socket: Socket) => {
    local.connections++;
    local.sockets.push(socket);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  local.port = (server.address() as AddressInfo).port;
  return local;
}

/**
 * `allowed.test` → 127.0.0.1, `rebind.test` → 169.254.169.254 (never connected to), `mixed.test` → both;
 * records the names asked. `table` may be changed, as DNS answers change.
 */
function stubResolver(): Resolver & { asked: string[]; table: Record<string, ResolvedAddress[]> } {
  const table: Record<string, ResolvedAddress[]> = {
    'allowed.test': [{ address: '127.0.0.1', family: 4 }],
    'rebind.test': [{ address: '169.254.169.254', family: 4 }],
    'mixed.test': [
      { address: '127.0.0.1', family: 4 },
      { address: '169.254.169.254', family: 4 },
    ],
  };
  const asked: string[] = [];
  const resolve = async (hostname: string) => {
    asked.push(hostname);
    const found = table[hostname];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found;
  };
  return Object.assign(resolve, { asked, table });
}

async function failure(promise: Promise<unknown>): Promise<StepError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StepError);
  return err as StepError;
}

const post = { step: 'webhook', body: { n: 1 }, timeoutMs: 5_000 };

describe('postJson', () => {
  test('posts JSON to the address the name resolves to, under that name, and returns the answer', async () => {
    const local = await startLocal();
    const resolve = stubResolver();
    const policy = parseOutboundPolicy('allowed.test');
    const answer = await postJson(`http://allowed.test:${local.port}/hook`, { ...post, headers: { 'idempotency-key': 'a:1' }, policy, resolve });

    expect(answer).toEqual({ status: 200, headers: expect.objectContaining({ 'content-type': 'application/json' }), contentType: 'application/json', text: '{"ok":true}', truncated: false });
    expect(resolve.asked).toEqual(['allowed.test']);
    expect(local.requests).toEqual([
      { host: `allowed.test:${local.port}`, headers: expect.objectContaining({ 'content-type': 'application/json', 'idempotency-key': 'a:1' }), body: '{"n":1}' },
    ]);
  });

  test('refuses a name that resolves to a refused address before connecting: a permanent outbound_not_allowed', async () => {
    const resolve = stubResolver();
    for (const url of ['http://rebind.test/latest/meta-data/', 'https://rebind.test/']) {
      const err = await failure(postJson(url, { ...post, resolve }));
      expect(err).toMatchObject({ kind: 'permanent', code: 'outbound_not_allowed' });
      expect(err.message).toBe(
        'Outbound requests to "rebind.test" are not allowed: it resolves to 169.254.169.254, which is in 169.254.0.0/16 (link-local and cloud-metadata addresses are refused unless the allow-list names them).',
      );
    }
    expect(resolve.asked).toEqual(['rebind.test', 'rebind.test']);
  });

  test('refuses a name when any of its addresses is refused, without connecting to the others', async () => {
    const local = await startLocal();
    const err = await failure(postJson(`http://mixed.test:${local.port}/`, { ...post, resolve: stubResolver() }));
    expect(err).toMatchObject({ kind: 'permanent', code: 'outbound_not_allowed' });
    expect(local.connections).toBe(0);
    expect(local.requests).toEqual([]);
  });

  test('refuses a URL the policy refuses without resolving it', async () => {
    const local = await startLocal();
    const resolve = stubResolver();
    const policy = parseOutboundPolicy('allowed.test');
    for (const url of [`http://127.0.0.1:${local.port}/`, 'http://169.254.169.254/', `http://other.test:${local.port}/`]) {
      expect(await failure(postJson(url, { ...post, policy, resolve })), url).toMatchObject({ kind: 'permanent', code: 'outbound_not_allowed' });
    }
    expect(resolve.asked).toEqual([]);
    expect(local.connections).toBe(0);
  });

  test('connects to a refused address the list names explicitly', async () => {
    const local = await startLocal();
    // 127.0.0.1 stands in for the address: the list opens it, as 169.254.169.254 would open that one.
    const policy = parseOutboundPolicy('127.0.0.1,rebind.test');
    expect((await postJson(`http://127.0.0.1:${local.port}/`, { ...post, policy })).status).toBe(200);
    expect(await failure(postJson(`http://rebind.test:${local.port}/`, { ...post, policy, resolve: stubResolver() }))).toMatchObject({ code: 'outbound_not_allowed' });
  });

  test('returns any status as it is, and follows no redirect', async () => {
    const local = await startLocal((res) => res.writeHead(302, { location: 'http://169.254.169.254/' }).end());
    const answer = await postJson(`http://allowed.test:${local.port}/`, { ...post, resolve: stubResolver() });
    expect(answer).toMatchObject({ status: 302, headers: { location: 'http://169.254.169.254/' }, text: '' });
    expect(local.requests).toHaveLength(1);
  });

  test('reads at most maxResponseBytes of the answer, and none with 0', async () => {
    const local = await startLocal((res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(10_000)));
    const url = `http://127.0.0.1:${local.port}/`;
    expect(await postJson(url, { ...post, maxResponseBytes: 100 })).toMatchObject({ contentType: 'text/plain', text: 'x'.repeat(100), truncated: true });
    expect(await postJson(url, { ...post, maxResponseBytes: 10_000 })).toMatchObject({ text: 'x'.repeat(10_000), truncated: false });
    expect(await postJson(url, { ...post, maxResponseBytes: 0 })).toMatchObject({ status: 200, text: '', truncated: false });
  });

  test('an answer that does not come, or not whole, within timeoutMs is a transient <step>_timeout', async () => {
    const local = await startLocal((res) => {
      if (local.requests.length === 1) return; // never answers
      res.writeHead(200).write('partial'); // answers, then never ends
    });
    const url = `http://127.0.0.1:${local.port}/`;
    for (let i = 0; i < 2; i++) {
      const err = await failure(postJson(url, { ...post, timeoutMs: 100 }));
      expect(err).toMatchObject({ kind: 'transient', code: 'webhook_timeout', message: 'The webhook could not be delivered: no answer within 100 ms.' });
    }
  });

  test('a network error, or the caller aborting, is a transient <step>_unreachable', async () => {
    const local = await startLocal();
    const closedPort = local.port;
    server!.close();
    server = undefined;
    const err = await failure(postJson(`http://127.0.0.1:${closedPort}/`, { ...post, step: 'tool' }));
    expect(err).toMatchObject({ kind: 'transient', code: 'tool_unreachable' });
    expect(err.message).toMatch(/^The tool could not be delivered: .*ECONNREFUSED/);

    expect(await failure(postJson('http://nowhere.test/', { ...post, resolve: stubResolver() }))).toMatchObject({ kind: 'transient', code: 'webhook_unreachable' });

    await startLocal(() => undefined); // holds every request
    const caller = new AbortController();
    const pending = failure(postJson(`http://127.0.0.1:${(server!.address() as AddressInfo).port}/`, { ...post, signal: caller.signal }));
    setTimeout(() => caller.abort(), 50);
    expect(await pending).toMatchObject({ kind: 'transient', code: 'webhook_unreachable' });
  });
});

// --- kept-alive connections ----------------------------------------------------------------------

describe('postJson keeps connections alive', () => {
  test('consecutive POSTs to one server go over one connection, resolved and checked once', async () => {
    const local = await startLocal();
    const resolve = stubResolver();
    const policy = parseOutboundPolicy('allowed.test');
    for (let i = 0; i < 3; i++) expect((await postJson(`http://allowed.test:${local.port}/`, { ...post, policy, resolve })).text).toBe('{"ok":true}');
    expect(local.requests).toHaveLength(3);
    expect(local.connections).toBe(1);
    expect(resolve.asked).toEqual(['allowed.test']);
  });

  test('a name that rebinds to a refused address is refused on the next new connection', async () => {
    let hold: (res: ServerResponse) => void = () => undefined;
    const held = new Promise<ServerResponse>((resolve) => (hold = resolve));
    const local = await startLocal((res) => (local.requests.length === 3 ? hold(res) : answerOk(res)));
    const resolve = stubResolver();
    const url = `http://allowed.test:${local.port}/`;
    await postJson(url, { ...post, resolve });
    resolve.table['allowed.test'] = [{ address: '169.254.169.254', family: 4 }];
    // The kept socket is still connected to 127.0.0.1, the address checked when it connected.
    expect((await postJson(url, { ...post, resolve })).status).toBe(200);
    expect(resolve.asked).toEqual(['allowed.test']);

    // The kept socket is busy with the first (held) request, so the second needs a connection of its own.
    const first = postJson(url, { ...post, resolve });
    const second = await failure(postJson(url, { ...post, resolve }));
    expect(second).toMatchObject({ kind: 'permanent', code: 'outbound_not_allowed' });
    expect(second.message).toContain('it resolves to 169.254.169.254');
    (await held).writeHead(200).end();
    expect((await first).status).toBe(200);
    expect(resolve.asked).toEqual(['allowed.test', 'allowed.test']);
    expect(local.connections).toBe(1);
  });

  test('two policies, or two resolvers, never share a socket', async () => {
    const local = await startLocal();
    const url = `http://allowed.test:${local.port}/`;
    const resolve = stubResolver();
    const other = stubResolver();
    // Equal lists, distinct policies: a socket belongs to the policy object it was checked under.
    const [a, b] = [parseOutboundPolicy('allowed.test'), parseOutboundPolicy('allowed.test')];
    for (let i = 0; i < 2; i++) {
      await postJson(url, { ...post, policy: a, resolve });
      await postJson(url, { ...post, policy: b, resolve });
      await postJson(url, { ...post, policy: a, resolve: other });
    }
    expect(local.requests).toHaveLength(6);
    expect(local.connections).toBe(3);
    expect(resolve.asked).toEqual(['allowed.test', 'allowed.test']);
    expect(other.asked).toEqual(['allowed.test']);
  });

  test('a kept socket the server closed while idle costs the next POST nothing: it goes out once, on a new connection', async () => {
    const local = await startLocal();
    const url = `http://127.0.0.1:${local.port}/`;
    await postJson(url, post);
    server!.closeIdleConnections();
    await once(local.sockets[0]!, 'close');
    // Sent at once, before this process has read the server's FIN: the request goes out on the closed
    // socket and fails with "socket hang up" (ECONNRESET), and postJson sends it again on a new connection.
    expect((await postJson(url, post)).text).toBe('{"ok":true}');
    expect(local.connections).toBe(2);
    expect(local.requests).toHaveLength(2);
  });

  test('an answer cut at maxResponseBytes, or not read at all, closes its connection instead of pooling it half-read', async () => {
    const local = await startLocal((res) => {
      if (local.requests.length === 3) return answerOk(res);
      res.writeHead(200, { 'content-type': 'text/plain' }).write('x'.repeat(1_000)); // and never ends
    });
    const url = `http://127.0.0.1:${local.port}/`;
    expect(await postJson(url, { ...post, maxResponseBytes: 100 })).toMatchObject({ text: 'x'.repeat(100), truncated: true });
    await once(local.sockets[0]!, 'close');
    expect(await postJson(url, { ...post, maxResponseBytes: 0 })).toMatchObject({ text: '', truncated: false });
    await once(local.sockets[1]!, 'close');
    // The next answer is read whole from a connection of its own, not from the rest of an earlier one.
    expect(await postJson(url, post)).toMatchObject({ status: 200, text: '{"ok":true}' });
    expect(local.connections).toBe(3);
  });

  test('an answer read whole past maxResponseBytes leaves nothing for the next answer to read', async () => {
    const local = await startLocal((res) => {
      if (local.requests.length === 2) return answerOk(res);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(10_000));
    });
    const url = `http://127.0.0.1:${local.port}/`;
    expect(await postJson(url, { ...post, maxResponseBytes: 100 })).toMatchObject({ text: 'x'.repeat(100), truncated: true });
    // Kept or closed (kept only when the whole answer had arrived), the next answer is its own.
    expect(await postJson(url, post)).toMatchObject({ status: 200, text: '{"ok":true}' });
  });

  test('an idle socket is closed by us before the server announced it would close it', async () => {
    // Node's server announces `Keep-Alive: timeout=2`; the client closes its idle socket a second before that.
    const local = await startLocal(answerOk, 2_000);
    await postJson(`http://127.0.0.1:${local.port}/`, post);
    const socket = local.sockets[0]!;
    let closedByClient = false;
    socket.once('end', () => (closedByClient = true)); // the client's FIN; the server's own timeout destroys without one
    await once(socket, 'close');
    expect(closedByClient).toBe(true);
  });

  test('an idle kept socket does not keep the process alive', async () => {
    const local = await startLocal();
    const url = `http://127.0.0.1:${local.port}/`;
    const module = fileURLToPath(new URL('../../src/core/outbound-fetch.ts', import.meta.url));
    // The child posts twice (one kept connection), then lists what still holds its event loop, and must exit by itself.
    const script = `
      import { postJson } from ${JSON.stringify(module)};
      const post = { step: 'tool', body: {}, timeoutMs: 5000 };
      await postJson(${JSON.stringify(url)}, post);
      await postJson(${JSON.stringify(url)}, post);
      setImmediate(() => console.log(JSON.stringify(process.getActiveResourcesInfo())));`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
    expect(JSON.parse(output)).not.toContain('TCPSocketWrap');
    expect(local.requests).toHaveLength(2);
    expect(local.connections).toBe(1);
  });
});
