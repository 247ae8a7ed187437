/** The plural of an English noun as the families' names need it: `policy` -> `policies`, `server` -> `servers`. */
export const pluralOf = (noun: string): string => (/[^aeiou]y$/i.test(noun) ? `${noun.slice(0, -1)}ies` : `${noun}s`);
