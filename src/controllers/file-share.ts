/**
 * File shares: the managed lifecycle. The driver is asked for the spec; a ready share's
 * `mount_target` is what servers mount (the server binding reads it for attached shares).
 */
import type { FamilyBinding } from './managed';
import { fileShareFamily, type FileShare } from '../resources/storage';
import type { FileShareDesired, FileShareDriver, FileShareOutputs } from '../drivers/storage';

export function fileShareBinding(driver: FileShareDriver): FamilyBinding<FileShareDesired, FileShareOutputs, null, FileShare> {
  return {
    family: fileShareFamily,
    readyState: 'available',
    driver,
    desired: ({ spec }) => Promise.resolve(spec),
    outputs: ({ mount_target }) => ({ mount_target }),
  };
}
