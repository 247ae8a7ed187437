/** The clock, in one place so that tests and the simulated provider agree on it. */
export const nowIso = (): string => new Date().toISOString();

export const addMs = (iso: string, ms: number): string => new Date(Date.parse(iso) + ms).toISOString();

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
