/**
 * What the store's watch shows, told apart by kind: the store keeps every object of a
 * family in its family's shape, so the kind is what says which shape a watched object has.
 */
import type { StoredObject } from '../store/types';
import { Delivery, deliveryFamily, Webhook, webhookFamily } from '../resources/webhook';

export const isDelivery = (object: StoredObject): object is StoredObject & Delivery => object.meta.kind === deliveryFamily.kind;

export const isWebhook = (object: StoredObject): object is StoredObject & Webhook => object.meta.kind === webhookFamily.kind;
