// Which addresses the server may send requests to on behalf of API callers (webhooks, HTTP tools):
// the URL is the caller's choice, so without a policy any caller could make the server reach what
// only it can reach (server-side request forgery). The check runs twice: on the URL at spawn, and
// on every address a name resolves to when connecting (a name may resolve elsewhere by then).
import { isIPv4, isIPv6 } from 'node:net';
import { domainToASCII } from 'node:url';
import { InvalidInputError, OutboundNotAllowedError } from './errors.js';

/** An IP address or block; IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is read as the IPv4 it maps. */
interface IpRange {
  version: 4 | 6;
  bits: bigint;
  prefix: number;
}

type Entry = { kind: 'host'; name: string } | { kind: 'subdomains'; of: string } | { kind: 'ip'; range: IpRange; text: string };

/**
 * Refused unless an entry inside them names them: link-local addresses, where clouds serve instance
 * metadata and credentials (169.254.169.254), and AWS's IPv6 metadata endpoint.
 */
const ALWAYS_REFUSED: readonly { range: IpRange; text: string }[] = ['169.254.0.0/16', 'fe80::/10', 'fd00:ec2::254/128'].map((text) => ({
  range: parseRange(text)!,
  text,
}));

/**
 * Where outbound requests may go. Without a list, anywhere but the always-refused ranges; with one,
 * only to the hosts, subdomains and IP ranges it names.
 */
export class OutboundPolicy {
  private constructor(private readonly entries: readonly Entry[] | undefined) {}

  static parse(list: string | undefined): OutboundPolicy {
    if (list === undefined) return new OutboundPolicy(undefined);
    return new OutboundPolicy(list.split(',').map((raw) => parseEntry(raw.trim())));
  }

  /**
   * The check at spawn: an http(s) URL whose host the policy allows (an IP literal is also checked
   * as the address it is). Returns the parsed URL; throws OutboundNotAllowedError.
   */
  checkUrl(url: string): URL {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new OutboundNotAllowedError(url, 'it is not a URL');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new OutboundNotAllowedError(parsed.host || url, `only http and https are allowed, not ${parsed.protocol.slice(0, -1)}`);
    }
    const host = urlHost(parsed);
    if (ipOf(host)) this.checkAddress(host, host);
    else this.checkName(host);
    return parsed;
  }

  /** The check when connecting: `address` is what `host` resolved to (or `host` itself, an IP). */
  checkAddress(host: string, address: string): void {
    const ip = ipOf(address);
    if (!ip) throw new OutboundNotAllowedError(host, `"${address}" is not an IP address`);
    const refused = ALWAYS_REFUSED.find(({ range }) => contains(range, ip));
    if (refused) {
      // Only an entry inside the refused range opens it: 0.0.0.0/0 is not a decision about metadata.
      if (this.ipEntries().some((range) => contains(refused.range, range) && contains(range, ip))) return;
      const why = 'link-local and cloud-metadata addresses are refused unless the allow-list names them';
      throw new OutboundNotAllowedError(host, `${whichAddress(host, address, ip)}is in ${refused.text} (${why})`);
    }
    if (!this.entries) return;
    if (ipOf(host)) {
      if (!this.ipEntries().some((range) => contains(range, ip))) throw new OutboundNotAllowedError(host, 'the address is not in the allow-list');
      return;
    }
    this.checkName(host);
  }

  /** The list as parsed (canonical forms), or `unset`. */
  toString(): string {
    if (!this.entries) return 'unset';
    return this.entries.map((e) => (e.kind === 'host' ? e.name : e.kind === 'subdomains' ? `*.${e.of}` : e.text)).join(',');
  }

  private checkName(host: string): void {
    if (!this.entries) return;
    const name = host.toLowerCase().replace(/\.$/, '');
    const listed = this.entries.some((e) => (e.kind === 'host' ? e.name === name : e.kind === 'subdomains' && name.endsWith(`.${e.of}`)));
    if (!listed) throw new OutboundNotAllowedError(host, 'the host is not in the allow-list');
  }

  private ipEntries(): IpRange[] {
    return (this.entries ?? []).flatMap((e) => (e.kind === 'ip' ? [e.range] : []));
  }
}

/**
 * Reads a comma-separated allow-list: hostnames (`example.com`), subdomain wildcards
 * (`*.example.com`: every subdomain, not the apex; list both for both), IPv4 and IPv6 addresses and
 * CIDR blocks (`10.0.0.0/8`, `fd00::/8`). Unset: every address but the always-refused ranges
 * (169.254.0.0/16, fe80::/10, fd00:ec2::254 and their IPv4-mapped forms) unless an entry inside
 * them names them. A bad entry is an InvalidInputError saying why.
 */
export function parseOutboundPolicy(list: string | undefined): OutboundPolicy {
  return OutboundPolicy.parse(list);
}

function parseEntry(raw: string): Entry {
  const bad = (why: string) => new InvalidInputError(`The outbound allow-list entry "${raw}" ${why}.`);
  if (raw === '') throw bad('is empty (entries are separated by single commas)');
  if (raw.includes('://')) throw bad('is a URL; list its host only');
  if (raw.includes('/')) {
    const range = parseRange(raw);
    if (!range) throw bad('is not a CIDR block (an IPv4 or IPv6 address, a slash and a prefix length)');
    if (range.bits !== network(range)) throw bad(`has bits set after its prefix (the block is ${rangeText({ ...range, bits: network(range) })})`);
    return { kind: 'ip', range, text: rangeText(range) };
  }
  const ip = ipOf(raw.replace(/^\[(.*)\]$/, '$1'));
  if (ip) return { kind: 'ip', range: ip, text: rangeText(ip) };
  if (raw === '*') throw bad('would allow every host; leave the list unset for that');
  if (raw.startsWith('*.')) return { kind: 'subdomains', of: hostName(raw.slice(2), bad) };
  return { kind: 'host', name: hostName(raw, bad) };
}

function hostName(raw: string, bad: (why: string) => Error): string {
  if (/:\d*$/.test(raw)) throw bad('has a port; entries are hosts (any port)');
  const name = domainToASCII(raw.replace(/\.$/, ''));
  const labels = name.split('.');
  if (name === '' || name.length > 253 || !labels.every((l) => /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/.test(l))) {
    throw bad('is neither a hostname, a *.domain wildcard, an IP address nor a CIDR block');
  }
  // A URL whose last label is a number is read as an IPv4 address (http://10.1/ is 10.0.0.1).
  if (/^(0x[0-9a-f]*|\d+)$/.test(labels.at(-1)!)) throw bad('ends in a number, so it is not a hostname, nor a whole IP address');
  return name;
}

/** The URL's host without IPv6 brackets (lower-case: URL keeps it so). */
function urlHost(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

function whichAddress(host: string, address: string, ip: IpRange): string {
  if (host !== address) return `it resolves to ${address}, which `;
  return ip.version === 4 && address.includes(':') ? `it maps to ${ipv4Text(ip.bits)}, which ` : 'it ';
}

function ipOf(text: string): IpRange | undefined {
  const address = text.replace(/%.*$/, ''); // an IPv6 zone (fe80::1%eth0) names an interface, not an address
  if (isIPv4(address)) return { version: 4, bits: ipv4Bits(address), prefix: 32 };
  if (isIPv6(address)) return unmapped({ version: 6, bits: ipv6Bits(address), prefix: 128 });
  return undefined;
}

function parseRange(text: string): IpRange | undefined {
  const [address = '', length = '', ...rest] = text.split('/');
  if (rest.length > 0 || !/^\d{1,3}$/.test(length)) return undefined;
  const bare = address.replace(/^\[(.*)\]$/, '$1');
  const prefix = Number(length);
  if (isIPv4(bare)) return prefix <= 32 ? { version: 4, bits: ipv4Bits(bare), prefix } : undefined;
  if (isIPv6(bare)) return prefix <= 128 ? unmapped({ version: 6, bits: ipv6Bits(bare), prefix }) : undefined;
  return undefined;
}

/** `::ffff:a.b.c.d` reaches the IPv4 host a.b.c.d: check it as that address (a block too, if all of it maps). */
function unmapped(ip: IpRange): IpRange {
  if (ip.version === 6 && ip.prefix >= 96 && ip.bits >> 32n === 0xffffn) return { version: 4, bits: ip.bits & 0xffff_ffffn, prefix: ip.prefix - 96 };
  return ip;
}

function contains(range: IpRange, ip: IpRange): boolean {
  if (range.version !== ip.version || ip.prefix < range.prefix) return false;
  const shift = BigInt(width(range) - range.prefix);
  return range.bits >> shift === ip.bits >> shift;
}

function network(range: IpRange): bigint {
  const shift = BigInt(width(range) - range.prefix);
  return (range.bits >> shift) << shift;
}

function width(range: IpRange): number {
  return range.version === 4 ? 32 : 128;
}

function ipv4Bits(address: string): bigint {
  return address.split('.').reduce((bits, octet) => (bits << 8n) | BigInt(Number(octet)), 0n);
}

function ipv6Bits(address: string): bigint {
  // An embedded IPv4 tail (::ffff:1.2.3.4) is two groups.
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(address)?.[1];
  const hex = tail ? address.slice(0, -tail.length) + ((n) => `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`)(ipv4Bits(tail)) : address;
  const [head, rest] = hex.split('::') as [string, string | undefined];
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  const missing = 8 - groups(head).length - groups(rest).length;
  const all = rest === undefined ? groups(head) : [...groups(head), ...Array<string>(missing).fill('0'), ...groups(rest)];
  return all.reduce((bits, group) => (bits << 16n) | BigInt(parseInt(group, 16)), 0n);
}

function rangeText(range: IpRange): string {
  const full = range.prefix === width(range);
  const address = range.version === 4 ? ipv4Text(range.bits) : ipv6Text(range.bits);
  return full ? address : `${address}/${range.prefix}`;
}

function ipv4Text(bits: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((bits >> shift) & 0xffn)).join('.');
}

function ipv6Text(bits: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => ((bits >> BigInt((7 - i) * 16)) & 0xffffn).toString(16));
  // The longest run of zero groups becomes "::" (RFC 5952).
  let best = { start: -1, length: 1 };
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > best.length) best = { start: i, length: j - i };
  }
  if (best.start < 0) return groups.join(':');
  return `${groups.slice(0, best.start).join(':')}::${groups.slice(best.start + best.length).join(':')}`;
}
