import { afterEach, describe, expect, it, vi } from 'vitest';
import { readJsonBody, sendJson, startHttpFake, type HttpFake } from './http-fake.js';

let fake: HttpFake | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const post = (url: string, body: string) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

describe('http fake plumbing', () => {
  it('listens on 127.0.0.1 at a port of its own and counts every request, whatever its route', async () => {
    fake = await startHttpFake((req, res) => sendJson(res, req.url === '/known' ? 200 : 404, { url: req.url }));
    expect(fake.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(fake.url).not.toBe('http://127.0.0.1:0');
    expect(fake.requests).toBe(0);

    const known = await fetch(`${fake.url}/known`);
    expect(known.status).toBe(200);
    expect(known.headers.get('content-type')).toBe('application/json');
    expect(await known.json()).toEqual({ url: '/known' });
    expect((await fetch(`${fake.url}/elsewhere`)).status).toBe(404);
    expect(fake.requests).toBe(2);
  });

  it('reads a JSON body parsed, and tells a body that is not JSON from JSON null', async () => {
    const bodies: { raw: string; json: unknown }[] = [];
    fake = await startHttpFake((req, res) => {
      void readJsonBody(req).then((body) => {
        bodies.push(body);
        sendJson(res, 200, {});
      });
    });
    for (const text of ['{"a":[1,2]}', 'null', 'not json', '']) await post(fake.url, text);
    expect(bodies).toEqual([
      { raw: '{"a":[1,2]}', json: { a: [1, 2] } },
      { raw: 'null', json: null },
      { raw: 'not json', json: undefined },
      { raw: '', json: undefined },
    ]);
  });

  it('closes promptly while it holds a request unanswered, once however often it is called', async () => {
    const onClose = vi.fn();
    fake = await startHttpFake(() => undefined, { onClose }); // never answers
    const pending = fetch(fake.url).catch((err: unknown) => err);
    await vi.waitFor(() => expect(fake!.requests).toBe(1));
    await Promise.all([fake.close(), fake.close()]);
    await fake.close();
    expect(onClose).toHaveBeenCalledTimes(1);
    // The client's connection was dropped, not answered.
    expect(await pending).toBeInstanceOf(TypeError);
    await expect(fetch(fake.url)).rejects.toBeInstanceOf(TypeError);
  });

  it('does not write to a response whose client has gone', async () => {
    let answered: Promise<boolean> | undefined;
    fake = await startHttpFake((req, res) => {
      answered = new Promise((resolve) =>
        res.on('close', () => {
          sendJson(res, 200, { late: true }); // were it written, the response would count as ended
          resolve(res.writableEnded);
        }),
      );
    });
    const controller = new AbortController();
    const request = fetch(fake.url, { signal: controller.signal }).catch((err: unknown) => err);
    await vi.waitFor(() => expect(answered).toBeDefined());
    controller.abort();
    expect(await request).toMatchObject({ name: 'AbortError' });
    expect(await answered).toBe(false);
  });
});
