import { promised } from '../../src/lib/promised';

describe('promised', () => {
  it('hands back what the computation returns', async () => {
    await expect(promised(() => 42)).resolves.toBe(42);
  });

  it('rejects with what the computation throws rather than throwing at the caller', async () => {
    const failed = new Error('not sealed');
    let result: Promise<never> | undefined;
    expect(() => {
      result = promised(() => {
        throw failed;
      });
    }).not.toThrow();
    await expect(result).rejects.toBe(failed);
  });
});
