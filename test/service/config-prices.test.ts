// A config's `prices`: loaded and checked as the rest of a config, merged with --llm-prices (a model
// both price is refused), and used by a real `serve`: a budget in dollars for a model only the
// config prices is taken, and what the agent spent is counted at that price.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/core/logger.js';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import { ConfigFileError, loadConfigFile, mergePrices } from '../../src/service/config-file.js';
import { api, killAllServers, startServer, waitForAgent } from '../helpers/server-process.js';
import { tempDbFile, tempDir } from '../helpers/temp.js';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.js';

const context = { llm: createSimulatedLlm(), logger: silentLogger };
const PRICED = { 'model-a': { inputPerMTok: 2, outputPerMTok: 10 } };

function writeModule(name: string, text: string): string {
  const file = path.join(tempDir('config-prices-'), name);
  fs.writeFileSync(file, text);
  return file;
}

describe('a config with prices', () => {
  it('loads them', async () => {
    const file = writeModule('prices.mjs', `export default { prices: ${JSON.stringify(PRICED)} };\n`);
    expect((await loadConfigFile(file, context)).prices).toEqual(PRICED);
    const none = writeModule('none.mjs', `export default {};\n`);
    expect((await loadConfigFile(none, context)).prices).toBeUndefined();
  });

  it('refuses a price that is not two non-negative numbers, naming where', async () => {
    const cases: [string, RegExp][] = [
      [`{ m: { inputPerMTok: -1, outputPerMTok: 1 } }`, /prices\.m\.inputPerMTok .*$/],
      [`{ m: { inputPerMTok: 1 } }`, /prices\.m\.outputPerMTok must be a number of dollars per million tokens\.$/],
      [`{ m: { inputPerMTok: 1, outputPerMTok: '2' } }`, /prices\.m\.outputPerMTok must be a number of dollars per million tokens\.$/],
      [`{ m: { inputPerMTok: 1, outputPerMTok: 2, currency: 'EUR' } }`, /prices\.m has unknown key "currency"\.$/],
      [`{ m: 0.15 }`, /prices\.m must be \{ inputPerMTok, outputPerMTok \}/],
    ];
    for (const [prices, cause] of cases) {
      const file = writeModule('bad.mjs', `export default { prices: ${prices} };\n`);
      const err = await loadConfigFile(file, context).catch((e: unknown) => e);
      expect(err, prices).toBeInstanceOf(ConfigFileError);
      expect((err as Error).message, prices).toMatch(new RegExp(`^Config ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `));
      expect((err as Error).message, prices).toMatch(cause);
    }
  });
});

describe('mergePrices', () => {
  const file = '/srv/agents.config.ts';

  it('joins the flag’s models and the config’s', () => {
    expect(mergePrices({ b: { inputPerMTok: 1, outputPerMTok: 1 } }, { file, prices: PRICED })).toEqual({ ...PRICED, b: { inputPerMTok: 1, outputPerMTok: 1 } });
    expect(mergePrices(undefined, { file, prices: PRICED })).toEqual(PRICED);
    expect(mergePrices(PRICED, undefined)).toEqual(PRICED);
    expect(mergePrices(undefined, { file, prices: undefined })).toBeUndefined();
  });

  it('refuses a model both price, naming the file', () => {
    const run = () => mergePrices({ 'model-a': { inputPerMTok: 3, outputPerMTok: 3 } }, { file, prices: PRICED });
    expect(run).toThrow(ConfigFileError);
    expect(run).toThrow(`Config ${file}: the price of "model-a" is given twice, by --llm-prices (or LLM_PRICES) and in prices: keep one.`);
  });
});

describe('serve with a config that prices a model', () => {
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());
  afterEach(() => killAllServers());

  it('takes a budget in dollars for that model and counts what is spent at its price', { timeout: 60_000 }, async () => {
    const file = writeModule('priced.mjs', `export default { prices: ${JSON.stringify(PRICED)} };\n`);
    const server = await startServer({ store: ['--db', tempDbFile()], llmUrl: fake.url, extra: ['--config', file] });

    const spawned = await api(server, 'POST', '/agents', { machine: 'agent', id: 'p1', input: { model: 'model-a', tasks: ['Summarize the report'], budget: { maxCostUsd: 5 } } });
    expect(spawned.status).toBe(201);
    const view = await waitForAgent(server, 'p1', (v) => v.state === 'idle' && v.progress === 1);
    const { budget, spent, usage } = view.context as { budget: unknown; spent: { totalTokens: number; costUsd: number }; usage: { promptTokens: number; completionTokens: number } };
    expect(budget).toEqual({ maxCostUsd: 5, price: PRICED['model-a'] });
    expect(usage.promptTokens + usage.completionTokens).toBeGreaterThan(0);
    expect(spent.costUsd).toBeCloseTo((usage.promptTokens * 2 + usage.completionTokens * 10) / 1_000_000, 9);

    // A model neither the flags nor the config price: refused at spawn, as without a config.
    const refused = await api(server, 'POST', '/agents', { machine: 'agent', id: 'p2', input: { model: 'model-b', tasks: ['x'], budget: { maxCostUsd: 5 } } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toContain('model-a');
    expect((await api(server, 'GET', '/agents/p2')).status).toBe(404);
  });
});
