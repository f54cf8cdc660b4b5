#!/bin/sh
# rollback-deployment (1.0.0, 1.1.0): `kubectl rollout undo` of one workload, then wait until the
# revision it returned to is available.
#
# Parameters: TARGET_NAMESPACE, TARGET_RESOURCE_KIND (Deployment|StatefulSet|DaemonSet),
# TARGET_RESOURCE_NAME, TO_REVISION (0 = the previous one), PAUSE_CANARY (1.1.0; only false is
# supported by this image), ROLLOUT_TIMEOUT_SECONDS (1.1.0; default 600).
# RBAC (role.yaml): get/list/watch/patch the workload kind; list replicasets/controllerrevisions.
. /workflow/lib.sh

param namespace TARGET_NAMESPACE
param kind TARGET_RESOURCE_KIND
param name TARGET_RESOURCE_NAME
param to_revision TO_REVISION 0
param pause_canary PAUSE_CANARY false
param timeout ROLLOUT_TIMEOUT_SECONDS 600

check_label TARGET_NAMESPACE "$namespace"
check_enum TARGET_RESOURCE_KIND "$kind" Deployment StatefulSet DaemonSet
check_name TARGET_RESOURCE_NAME "$name"
check_int TO_REVISION "$to_revision" 0 1000000000
check_bool PAUSE_CANARY "$pause_canary"
check_int ROLLOUT_TIMEOUT_SECONDS "$timeout" 60 3600
if [ "$pause_canary" = true ]; then
	fail "PAUSE_CANARY=true: this image does not manage Argo Rollouts or Flagger canaries; nothing was changed"
fi

target="$(resource_of "$kind")/$name"
must_exist "$namespace" "$target"

log "rolling back $kind $namespace/$name to revision $to_revision (0: the previous one)"
if ! out=$(k rollout undo -n "$namespace" "$target" --to-revision="$to_revision" 2>&1); then
	fail "kubectl rollout undo $kind $namespace/$name: $out"
fi
log "$out"
case $out in
*"skipped rollback"*) fail "nothing to roll back for $kind $namespace/$name: $out" ;;
esac

wait_rollout "$namespace" "$target" "$timeout" ||
	fail "rolled back $kind $namespace/$name, but it is not available after ${timeout}s: $_out"
log "rolled back $kind $namespace/$name"
