#!/bin/sh
# Apply the trial's initial egress policy, then report ready and wait.
# Harbor's compose file passes the policy in EGRESS_CONTROL_INITIAL_NETWORK_MODE
# and EGRESS_CONTROL_INITIAL_ALLOWED_HOSTS and waits for READY_FILE (its
# healthcheck); it runs us under `init: true`, so signals reach `sleep`.
set -eu

READY_FILE=/tmp/harbor-docker-egress-control-sidecar.ready
mode="${EGRESS_CONTROL_INITIAL_NETWORK_MODE:-public}"

rm -f "$READY_FILE"
case "$mode" in
  public)
    network-policy allow-all
    ;;
  no-network)
    network-policy deny-all
    ;;
  allowlist)
    set -f  # a target such as *.example.com must reach network-policy unexpanded
    # shellcheck disable=SC2086
    network-policy allow ${EGRESS_CONTROL_INITIAL_ALLOWED_HOSTS:-}
    set +f
    ;;
  *)
    echo "egress sidecar: unknown EGRESS_CONTROL_INITIAL_NETWORK_MODE '$mode' (public, no-network or allowlist)" >&2
    exit 2
    ;;
esac
touch "$READY_FILE"
echo "egress sidecar ready: initial policy $mode"
exec sleep infinity
