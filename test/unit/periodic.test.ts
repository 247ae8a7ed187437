/** lib/periodic.ts: runs one at a time, a failure goes to onError and the next run still happens, stop waits for the run under way. */
import { Periodic } from '../../src/lib/periodic';

describe('Periodic', () => {
  it('never runs twice at once, and the asks made while a run waits share it', async () => {
    let inFlight = 0;
    let most = 0;
    let runs = 0;
    const periodic = new Periodic(
      60_000,
      async () => {
        inFlight += 1;
        most = Math.max(most, inFlight);
        await new Promise((resolve) => setTimeout(resolve, 5));
        inFlight -= 1;
        runs += 1;
      },
      () => undefined,
    );
    const first = periodic.runNow();
    await new Promise((resolve) => setImmediate(resolve)); // the first run is under way
    const asked = [periodic.runNow(), periodic.runNow(), periodic.runNow()];
    expect(asked[1]).toBe(asked[0]);
    await Promise.all([first, ...asked]);
    expect([runs, most]).toEqual([2, 1]);
    await periodic.runNow();
    expect(runs).toBe(3);
  });

  it('hands a failed run to onError, and the next run is made', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const periodic = new Periodic(
      60_000,
      () => {
        calls += 1;
        return calls === 1 ? Promise.reject(new Error('store away')) : Promise.resolve();
      },
      (err) => errors.push(err),
    );
    await periodic.runNow();
    await periodic.runNow();
    expect(calls).toBe(2);
    expect(errors).toEqual([new Error('store away')]);
  });

  it('runs on its interval once started, and stop waits for the run under way', async () => {
    let runs = 0;
    let finished = false;
    const periodic = new Periodic(
      10,
      async () => {
        runs += 1;
        await new Promise((resolve) => setTimeout(resolve, 30));
        finished = true;
      },
      () => undefined,
    );
    periodic.start();
    periodic.start(); // a second start keeps the one timer
    while (runs === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await periodic.stop();
    expect(finished).toBe(true);
    const after = runs;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(runs).toBe(after);
  });
});
