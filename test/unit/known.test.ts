import { known } from '../../src/lib/known';

describe('known', () => {
  it('hands back a value that is there, falsy ones included', () => {
    expect(known('', 'a name')).toBe('');
    expect(known(0, 'a count')).toBe(0);
    expect(known(false, 'a flag')).toBe(false);
  });

  it('throws an error naming what is missing, for undefined and null', () => {
    expect(() => known(undefined, 'the spec of a CronJob')).toThrow('internal error: the spec of a CronJob is missing');
    expect(() => known(null, 'the session')).toThrow('internal error: the session is missing');
  });
});
