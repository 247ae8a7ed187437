/** How record values read in lists and details. */
export function formatValue(value: unknown): string {
  if (value === null || value === undefined || value === '') return '—';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (typeof value === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(value)) return new Date(value).toLocaleString();
  if (Array.isArray(value)) return value.length === 0 ? '—' : value.map(formatValue).join('; ');
  // A nested record (a mount, a reference) reads as its fields: `file_share_id fs_1, mount_path /mnt/...`.
  if (typeof value === 'object')
    return Object.entries(value)
      .map(([key, inner]) => `${key} ${formatValue(inner)}`)
      .join(', ');
  return String(value);
}

export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

/** An enum value as words (`resource_failed` → "resource failed", `ip_addr` → "ip addr"): the value itself is what is sent. */
export const wordsOf = (value: string): string => value.replace(/_/g, ' ');

/** A record value as a list or detail shows it: an enum field's value in words, anything else as formatValue does. */
export const formatField = (value: unknown, isEnum: boolean): string => (isEnum && typeof value === 'string' ? wordsOf(value) : formatValue(value));
