/**
 * A value worked out at once, handed back as a promise: for a method that must return one
 * (a Store's reads, a driver's steps) but has nothing to wait for.
 */

/**
 * What `compute` returns, as a promise; what it throws, as the promise's rejection, as an
 * `async` function does. (`Promise.resolve(compute())` would throw at the caller instead,
 * past a `.catch()` it chained on.)
 */
export const promised = <T>(compute: () => T): Promise<T> =>
  new Promise<T>((resolve) => {
    resolve(compute());
  });
