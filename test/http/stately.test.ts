// GET /machines/:name/stately: the machine as `createMachine({...})` text for Stately's editor
// ("Import from code"). The text is checked the strictest way available offline: evaluated with
// XState's own createMachine, it must give the same chart (states, transitions, guards, actions,
// invokes) as the machine the runtime runs.
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { assign, createMachine, fromPromise, setup, type AnyStateMachine, type StateNode } from 'xstate';
import { createSimulatedLlm } from '../../src/llm/simulated-client.js';
import { agentDefinition } from '../../src/agents/reference/definition.js';
import { createServer } from '../../src/http/app.js';
import { runtimesClosedAfterEach } from '../helpers/runtime.js';

/** A user's machine with the things that must not leak or break: a secret, a state named like one, inline logic. */
const vaultMachine = setup({ actors: { unlock: fromPromise(async () => 'open') } }).createMachine({
  id: 'vault',
  context: { apiKey: 'sk-live-DO-NOT-LEAK', owner: { name: 'ada', password: 'hunter2' }, attempts: 0 },
  initial: 'locked',
  states: {
    locked: {
      on: {
        token: { target: 'unlocking', actions: assign({ attempts: ({ context }) => context.attempts + 1 }) },
        'reset.password': { guard: ({ context }) => context.attempts < 3, target: 'locked' },
      },
    },
    unlocking: {
      invoke: [
        { id: 'unlock', src: 'unlock', input: ({ context }) => ({ key: context.apiKey }), onDone: 'token' },
        // An inline actor (setup's types only know named ones, hence the cast).
        { id: 'audit', src: fromPromise(async () => undefined) as never },
      ],
    },
    token: { type: 'final' },
  },
});

const startRuntime = runtimesClosedAfterEach();

/** The app as served: createServer mounts the Stately route (after auth) itself. */
async function app(token?: string) {
  const t = await startRuntime({
    machines: [agentDefinition({ llm: createSimulatedLlm() }), { name: 'vault', machine: vaultMachine }],
  });
  const server = createServer({ runtime: t.runtime, ...(token ? { token } : {}) });
  return { server, runtime: t.runtime };
}

/** Evaluates the served text the way a JavaScript importer would, with XState's createMachine in scope. */
function evaluate(code: string): AnyStateMachine {
  return new Function('createMachine', `"use strict"; return ${code}`)(createMachine) as AnyStateMachine;
}

/** Every transition of the chart as comparable text: source, event, guard, targets, actions. */
function transitions(machine: AnyStateMachine): string[] {
  const out: string[] = [];
  const visit = (node: StateNode<any, any>) => {
    for (const [event, list] of node.transitions) {
      for (const t of list) {
        const guard = t.guard ? (typeof t.guard === 'string' ? t.guard : (t.guard as { type?: string }).type ?? 'inline') : '-';
        const targets = (t.target ?? []).map((s: StateNode<any, any>) => s.id).join(',');
        const actions = t.actions.map((a: unknown) => (typeof a === 'string' ? a : (a as { type?: string }).type ?? 'fn')).join(',');
        out.push(`${node.id} ${event} [${guard}] -> ${targets} / ${actions}`);
      }
    }
    for (const t of node.always ?? []) out.push(`${node.id} always -> ${(t.target ?? []).map((s) => s.id).join(',')}`);
    for (const inv of node.invoke) out.push(`${node.id} invokes ${inv.id}:${typeof inv.src === 'string' ? inv.src : 'logic'}`);
    for (const child of Object.values(node.states)) visit(child);
  };
  visit(machine.root);
  return out.sort();
}

describe('GET /machines/:name/stately', () => {
  it('serves the agent machine as createMachine(...) text that XState turns back into the same chart', async () => {
    const { server, runtime } = await app();
    const res = await server.request('/machines/agent/stately');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const code = await res.text();
    expect(code.startsWith('createMachine({')).toBe(true);
    // Implementations by name, data mappers left out: nothing that only runs in our process.
    expect(code).toContain('"src": "callLlm"');
    expect(code).toContain('"type": "mayRetry"');
    expect(code).not.toMatch(/"(input|params|context)":/);

    const imported = evaluate(code);
    const original = runtime.machines.get('agent')!.machine;
    expect(transitions(imported)).toEqual(transitions(original));
    expect(transitions(imported)).toContain('agent.callingLLM.requesting xstate.error.actor.llm [mayRetry] -> agent.callingLLM.backingOff / scheduleRetry');
    expect(imported.root.initial?.target.map((s) => s.id)).toEqual(['agent.idle']);
  });

  it('redacts secrets from a literal context, keeps state and event names, and names inline logic', async () => {
    const { server } = await app();
    const code = await (await server.request('/machines/vault/stately')).text();
    expect(code).not.toContain('sk-live-DO-NOT-LEAK');
    expect(code).not.toContain('hunter2');
    const imported = evaluate(code);
    expect(imported.config.context).toEqual({ apiKey: '[redacted]', owner: { name: 'ada', password: '[redacted]' }, attempts: 0 });
    // "token" (a state and an event) and "reset.password" (an event) are names, not secrets.
    expect(Object.keys(imported.root.states)).toEqual(['locked', 'unlocking', 'token']);
    expect(transitions(imported)).toEqual(
      expect.arrayContaining([
        'vault.locked token [-] -> vault.unlocking / xstate.assign',
        'vault.locked reset.password [guard] -> vault.locked / ',
        'vault.unlocking invokes unlock:unlock',
        'vault.unlocking invokes audit:audit',
      ]),
    );
  });

  it('404s an unknown machine, needs the token like every route, and is in a valid OpenAPI document', async () => {
    const { server } = await app('s3cret');
    const missing = await server.request('/machines/nope/stately', { headers: { authorization: 'Bearer s3cret' } });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: { code: 'not_found', message: 'No machine with id "nope".' } });
    expect((await server.request('/machines/agent/stately')).status).toBe(401);
    const doc = (await (await server.request('/openapi.json', { headers: { authorization: 'Bearer s3cret' } })).json()) as {
      paths: Record<string, { get?: { responses?: Record<string, { content?: Record<string, unknown> }> } }>;
    };
    expect(Object.keys(doc.paths['/machines/{name}/stately']?.get?.responses?.['200']?.content ?? {})).toEqual(['text/plain']);
    expect(await new Validator().validate(doc as never)).toMatchObject({ valid: true });
  });
});
