"""Schemathesis hooks for scripts/fuzz-api.sh: make most generated bodies reach the API's
rules instead of stopping at the first one. A region is free text in the document (the
catalog is per install), so random regions are all refused as region_unavailable, and a
random webhook url is never an https URL, nor a random tunnel type, CIDR or peer address
valid (free text too, so that their refusals keep their domain codes); without these, resources are rarely created and
the operations on them only ever see 404. One body in four keeps its generated value, so
the refusals stay covered. The choice is a checksum of the body: a seed replays the same run.
"""
import json
import re
import zlib

import schemathesis

# The default catalog (src/config.ts DEFAULT_REGIONS), which the fuzzed service runs with.
REGIONS = ["fra1", "ams3", "lon1", "nyc1", "sfo3", "sgp1"]


def _pick(body) -> int:
    return zlib.crc32(json.dumps(body, sort_keys=True, default=str).encode())


@schemathesis.hook
def map_body(ctx, body):
    if not isinstance(body, dict):
        return body
    pick = _pick(body)
    if pick % 4 == 0:
        return body
    path = ctx.operation.path
    if isinstance(body.get("region"), str):
        body["region"] = REGIONS[pick % len(REGIONS)]
    if path.startswith("/api/v1/webhooks") and isinstance(body.get("url"), str):
        body["url"] = f"https://hooks.example.com/{pick % 1000}"
    if path == "/api/v1/vpn-gateways" and "tunnel_type" in body:
        body["tunnel_type"] = ("ipsec", "wireguard")[pick % 2]
        body["remote_network_cidr"] = f"192.168.{pick % 256}.0/24"
        body["remote_peer_ip"] = f"34.90.{pick % 256}.{1 + pick % 250}"
        body.pop("local_network_cidr", None)  # the team network by default
    return body


# A load balancer's attach and detach take a server id in the body, which no link can fill
# (a link carries one response's values, and the path id is the load balancer's). The ids
# of servers this run created, and of those attached per load balancer, are kept here.
_SERVERS: list[str] = []
_ATTACHED: dict[str, list[str]] = {}
_BACKEND_ACTION = re.compile(r"/api/v1/load-balancers/([^/]+)/(attach|detach)$")


@schemathesis.hook
def after_call(ctx, case, response):
    if case.method != "POST" or response.status_code not in (200, 201):
        return
    try:
        data = response.json().get("data") or {}
    except (ValueError, AttributeError):
        return
    if case.operation.path == "/api/v1/servers" and isinstance(data.get("id"), str):
        _SERVERS.append(data["id"])
        del _SERVERS[:-50]
    action = _BACKEND_ACTION.search(case.formatted_path)
    if action and isinstance(case.body, dict):
        attached = _ATTACHED.setdefault(action.group(1), [])
        if action.group(2) == "attach":
            attached.append(case.body.get("server_id"))
        elif case.body.get("server_id") in attached:
            attached.remove(case.body.get("server_id"))


@schemathesis.hook
def before_call(ctx, case, kwargs):
    _end_watches_soon(case)
    action = _BACKEND_ACTION.search(case.formatted_path)
    if not action or not isinstance(case.body, dict) or not isinstance(case.body.get("server_id"), str):
        return
    pick = _pick(case.body)
    if pick % 4 == 0:
        return
    known = _SERVERS if action.group(2) == "attach" else _ATTACHED.get(action.group(1)) or _SERVERS
    if known:
        case.body["server_id"] = known[pick % len(known)]


# The longest watch the service takes by default (CLOUDPLANE_WATCH_MAX_SECONDS, src/config.ts).
_WATCH_MAX_SECONDS = 1800


def _end_watches_soon(case):
    """A watch (watch=true) streams until its timeout, up to half an hour, so the run waited out
    its 10-second request timeout on each. One of a second ends well inside it, and its events
    are still read. In before_call, which every phase goes through: the coverage phase's cases
    never pass the map_* hooks. A timeout the case sets outside 1 to the most a watch takes
    is left as it is, for its refusal."""
    query = case.query
    if not isinstance(query, dict) or query.get("watch") not in (True, "true"):
        return
    timeout = query.get("timeout_seconds")
    if isinstance(timeout, str) and timeout.isascii() and timeout.isdigit():
        timeout = int(timeout)
    if timeout is None or (type(timeout) is int and 1 < timeout <= _WATCH_MAX_SECONDS):
        query["timeout_seconds"] = 1
