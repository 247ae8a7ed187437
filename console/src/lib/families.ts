/**
 * What the console knows of each resource family beyond what the OpenAPI document says:
 * its title, the columns a list shows, its actions, and panels of its own for the detail
 * page. Lists, details, create and delete are one generic set of pages (pages/families/).
 */
import type { Component } from 'svelte';
import LoadBalancerBackends from '../pages/families/panels/LoadBalancerBackends.svelte';
import FileShareServers from '../pages/families/panels/FileShareServers.svelte';
import VpnTunnelStatus from '../pages/families/panels/VpnTunnelStatus.svelte';

export interface ResourceRecord {
  id: string;
  name: string;
  status: string;
  status_reason: string | null;
  region?: string;
  [field: string]: unknown;
}

export interface Column {
  key: string;
  label: string;
  /** Secondary columns are left out on a phone-sized screen. */
  secondary?: boolean;
}

/** `POST /api/v1/<path>/<id>/<name>` without a body, offered in the given states. */
export interface SimpleAction {
  name: string;
  label: string;
  allowedIn: string[];
}

export interface PanelProps {
  record: ResourceRecord;
  family: Family;
  /** Reads the record again (after an action changed it). */
  refresh: () => Promise<void>;
}

/** A choice offered in the delete confirmation, sent as `?<query>=true`. */
export interface DeleteOption {
  query: string;
  label: string;
}

export interface Family {
  /** The API's path segment, also the console's: `/#/load-balancers`. */
  path: string;
  title: string;
  singular: string;
  columns: Column[];
  actions: SimpleAction[];
  panels: Component<PanelProps>[];
  /** Record fields a panel shows better than the generic detail list. */
  shownByPanels: string[];
  deletable: boolean;
  deleteOptions?: DeleteOption[];
}

export const families: Family[] = [
  {
    path: 'load-balancers',
    title: 'Load balancers',
    singular: 'load balancer',
    columns: [
      { key: 'region', label: 'Region' },
      { key: 'protocol', label: 'Protocol', secondary: true },
      { key: 'port', label: 'Port', secondary: true },
      { key: 'ipv4', label: 'IPv4', secondary: true },
    ],
    actions: [],
    panels: [LoadBalancerBackends],
    shownByPanels: ['backends'],
    deletable: true,
  },
  {
    path: 'vpn-gateways',
    title: 'VPN gateways',
    singular: 'VPN gateway',
    columns: [
      { key: 'region', label: 'Region' },
      { key: 'tunnel_type', label: 'Tunnel', secondary: true },
      { key: 'tunnel_status', label: 'Tunnel status', secondary: true },
      { key: 'remote_peer_ip', label: 'Remote peer', secondary: true },
    ],
    actions: [],
    panels: [VpnTunnelStatus],
    shownByPanels: ['tunnel_status', 'bytes_sent', 'bytes_received', 'last_handshake'],
    deletable: true,
  },
  {
    path: 'servers',
    title: 'Servers',
    singular: 'server',
    columns: [
      { key: 'region', label: 'Region' },
      { key: 'plan', label: 'Plan', secondary: true },
      { key: 'ipv4', label: 'IPv4', secondary: true },
    ],
    actions: [
      { name: 'stop', label: 'Stop', allowedIn: ['running'] },
      { name: 'start', label: 'Start', allowedIn: ['stopped'] },
      { name: 'reboot', label: 'Reboot', allowedIn: ['running'] },
    ],
    panels: [],
    shownByPanels: [],
    deletable: true,
  },
  {
    path: 'object-storage',
    title: 'Buckets',
    singular: 'bucket',
    columns: [
      { key: 'region', label: 'Region' },
      { key: 'public', label: 'Public', secondary: true },
      { key: 'endpoint', label: 'Endpoint', secondary: true },
    ],
    actions: [],
    panels: [],
    shownByPanels: [],
    deletable: true,
    // A bucket holding objects is refused (409 bucket_not_empty) unless they go with it.
    deleteOptions: [{ query: 'force', label: 'Also delete the objects it holds' }],
  },
  {
    path: 'file-storage',
    title: 'File shares',
    singular: 'file share',
    columns: [
      { key: 'region', label: 'Region' },
      { key: 'size_gb', label: 'Size (GB)', secondary: true },
      { key: 'mount_target', label: 'Mount target', secondary: true },
    ],
    actions: [],
    panels: [FileShareServers],
    shownByPanels: [],
    deletable: true,
  },
  {
    path: 'jobs',
    title: 'Jobs',
    singular: 'job',
    columns: [
      { key: 'region', label: 'Region', secondary: true },
      { key: 'plan', label: 'Plan', secondary: true },
      { key: 'exit_code', label: 'Exit code' },
    ],
    actions: [{ name: 'cancel', label: 'Cancel job', allowedIn: ['queued', 'running'] }],
    panels: [],
    shownByPanels: [],
    // Jobs are kept as history: the API has no DELETE for them.
    deletable: false,
  },
];
