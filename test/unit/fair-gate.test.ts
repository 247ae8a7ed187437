/**
 * FairGate (lib/fair-gate.ts): the agent's LLM endpoint shared by teams in turns, with a
 * bound per team, and waiting bounded in number and time.
 */
import { FairGate, GateBusyError } from '../../src/lib/fair-gate';

/** A call that runs until `finish` is called; `started` says whether the gate let it in. */
function heldCall(gate: FairGate, team: string, log: string[], name: string) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  const call = { started: false, result: undefined as Promise<string> | undefined, finish };
  call.result = gate.run(team, async () => {
    call.started = true;
    log.push(name);
    await done;
    return name;
  });
  return call;
}
const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('FairGate', () => {
  it("holds a team to its places, while another team's call starts at once", async () => {
    const gate = new FairGate({ total: 3, perTeam: 2, maxWaitingPerTeam: 100, maxWaitMs: 60_000 });
    const log: string[] = [];
    const a = Array.from({ length: 10 }, (_, i) => heldCall(gate, 'team_a', log, `a${i}`));
    await turn();
    expect(gate.runningOf('team_a')).toBe(2);
    const b = heldCall(gate, 'team_b', log, 'b0');
    await turn();
    expect(b.started).toBe(true);
    expect(log).toEqual(['a0', 'a1', 'b0']);
    for (const call of [...a, b]) call.finish();
    await Promise.all([...a, b].map((call) => call.result));
    expect(log).toEqual(['a0', 'a1', 'b0', ...Array.from({ length: 8 }, (_, i) => `a${i + 2}`)]);
  });

  it('gives free places to the teams waiting in turns, first come first served within a team', async () => {
    const gate = new FairGate({ total: 1, perTeam: 1, maxWaitingPerTeam: 100, maxWaitMs: 60_000 });
    const log: string[] = [];
    const first = heldCall(gate, 'team_c', log, 'c0');
    const a = Array.from({ length: 5 }, (_, i) => heldCall(gate, 'team_a', log, `a${i}`));
    const b = Array.from({ length: 2 }, (_, i) => heldCall(gate, 'team_b', log, `b${i}`));
    const calls = [first, ...a, ...b];
    // Each call ends as soon as it starts, so the order they start in is the gate's.
    for (let i = 0; i < calls.length; i++) {
      await turn();
      for (const call of calls) if (call.started) call.finish();
    }
    await Promise.all(calls.map((call) => call.result));
    expect(log).toEqual(['c0', 'a0', 'b0', 'a1', 'b1', 'a2', 'a3', 'a4']);
  });

  it('refuses a call at once beyond the waiting bound, and one that waits too long, without running it', async () => {
    const gate = new FairGate({ total: 1, perTeam: 1, maxWaitingPerTeam: 1, maxWaitMs: 50 });
    const log: string[] = [];
    const running = heldCall(gate, 'team_a', log, 'a0');
    const waiting = heldCall(gate, 'team_a', log, 'a1');
    await expect(heldCall(gate, 'team_a', log, 'a2').result).rejects.toBeInstanceOf(GateBusyError);
    await expect(waiting.result).rejects.toBeInstanceOf(GateBusyError);
    running.finish();
    expect(await running.result).toBe('a0');
    expect(log).toEqual(['a0']);
    expect(gate.runningOf()).toBe(0);
    // Nothing stays held: the next call starts at once.
    const next = heldCall(gate, 'team_a', log, 'a3');
    await turn();
    expect(next.started).toBe(true);
    next.finish();
    await next.result;
  });
});
