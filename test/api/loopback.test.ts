// The names the API trusts: loopback Host headers and Origins, listen addresses, and the public allowance.
import { describe, expect, it } from 'vitest';
import { hostnameOfHostHeader, isLoopbackHostname, isLoopbackOrigin } from '../../src/api/loopback.js';
import { isLoopbackAddress, parseListenAddress, publicHostAllowance } from '../../src/api/listen-address.js';
import { checkBearer } from '../../src/api/bearer-token.js';

describe('loopback names', () => {
  it('accepts localhost, 127.0.0.0/8 and ::1 only', () => {
    for (const h of [
      'localhost',
      'LocalHost',
      'localhost.',
      '127.0.0.1',
      '127.255.0.9',
      '[::1]',
      '::1',
      '[0:0:0:0:0:0:0:1]',
    ])
      expect(isLoopbackHostname(h), h).toBe(true);
    for (const h of [
      'evil.example',
      'localhost.evil.example',
      '128.0.0.1',
      '0.0.0.0',
      '[::]',
      '10.0.0.1',
      '127.0.0.1.nip.io',
      'localhos',
      '',
    ])
      expect(isLoopbackHostname(h), h).toBe(false);
  });

  it('reads Host headers strictly', () => {
    expect(hostnameOfHostHeader('localhost:8080')).toBe('localhost');
    expect(hostnameOfHostHeader('[::1]:8080')).toBe('[::1]');
    expect(hostnameOfHostHeader('127.0.0.1')).toBe('127.0.0.1');
    for (const h of ['localhost:99999', 'a b', 'user@localhost', 'localhost:80:80', 'localhost/x', ''])
      expect(hostnameOfHostHeader(h), h).toBeUndefined();
  });

  it('accepts only http(s) Origins of loopback names', () => {
    for (const o of ['http://localhost', 'http://localhost:3000', 'https://127.0.0.1:8443', 'http://[::1]:8080'])
      expect(isLoopbackOrigin(o), o).toBe(true);
    for (const o of [
      'null',
      'http://evil.example',
      'ws://localhost',
      'file://',
      'http://localhost.evil.example',
      'http://localhost/path',
      'http://u:p@localhost',
      'http://localhost, http://evil.example',
    ])
      expect(isLoopbackOrigin(o), o).toBe(false);
  });
});

describe('--listen', () => {
  it('parses HOST:PORT, [v6]:PORT and none', () => {
    expect(parseListenAddress('127.0.0.1:8080')).toEqual({ host: '127.0.0.1', port: 8080 });
    expect(parseListenAddress('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(parseListenAddress('localhost:80')).toEqual({ host: 'localhost', port: 80 });
    expect(parseListenAddress('none')).toBeUndefined();
    for (const t of ['8080', ':8080', 'localhost', 'localhost:99999', 'http://localhost:8080', '::1:8080', ''])
      expect(() => parseListenAddress(t), t).toThrow(/HOST:PORT/);
  });

  it('tells loopback from public addresses', () => {
    expect(isLoopbackAddress({ host: '127.0.0.1', port: 1 })).toBe(true);
    expect(isLoopbackAddress({ host: '::1', port: 1 })).toBe(true);
    expect(isLoopbackAddress({ host: '0.0.0.0', port: 1 })).toBe(false);
    expect(isLoopbackAddress({ host: 'device.local', port: 1 })).toBe(false);
  });

  it('a public agent answers to IP literals and its own names, never to other names', () => {
    const allowed = publicHostAllowance({ host: '0.0.0.0', port: 8080 }, ['Edge-7']);
    for (const h of ['10.1.2.3', '[fe80::1]', 'edge-7', '0.0.0.0']) expect(allowed(h), h).toBe(true);
    for (const h of ['evil.example', 'edge-7.evil.example']) expect(allowed(h), h).toBe(false);
  });
});

describe('bearer tokens', () => {
  const token = 'a'.repeat(64);
  it('accepts exactly the token, with the scheme in any case', () => {
    expect(checkBearer(`Bearer ${token}`, token)).toBe('ok');
    expect(checkBearer(`bearer ${token}`, token)).toBe('ok');
    expect(checkBearer(undefined, token)).toBe('missing');
    expect(checkBearer('', token)).toBe('missing');
    for (const h of [
      `Bearer ${token}a`,
      `Bearer ${token.slice(1)}`,
      `Basic ${token}`,
      token,
      `Bearer ${token} extra`,
      'Bearer ',
    ])
      expect(checkBearer(h, token), h).toBe('invalid');
  });
});
