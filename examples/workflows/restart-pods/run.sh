#!/bin/sh
# restart-pods (1.0.0): `kubectl rollout restart` of one workload (a new pod-template annotation, the
# spec otherwise unchanged), then, unless WAIT_READY=false, wait until the new Pods are available.
#
# Parameters: TARGET_NAMESPACE, TARGET_RESOURCE_KIND (Deployment|StatefulSet|DaemonSet),
# TARGET_RESOURCE_NAME, WAIT_READY (default true).
# RBAC (role.yaml): get/list/watch/patch the workload kind.
. /workflow/lib.sh

param namespace TARGET_NAMESPACE
param kind TARGET_RESOURCE_KIND
param name TARGET_RESOURCE_NAME
param wait_ready WAIT_READY true
timeout=300 # the catalog's estimatedDuration is 3m; the executor's Job deadline is twice that

check_label TARGET_NAMESPACE "$namespace"
check_enum TARGET_RESOURCE_KIND "$kind" Deployment StatefulSet DaemonSet
check_name TARGET_RESOURCE_NAME "$name"
check_bool WAIT_READY "$wait_ready"

target="$(resource_of "$kind")/$name"
must_exist "$namespace" "$target"

log "restarting $kind $namespace/$name"
if ! out=$(k rollout restart -n "$namespace" "$target" 2>&1); then
	fail "kubectl rollout restart $kind $namespace/$name: $out"
fi
log "$out"
if [ "$wait_ready" = true ]; then
	wait_rollout "$namespace" "$target" "$timeout" ||
		fail "restarted $kind $namespace/$name, but its new Pods are not available after ${timeout}s: $_out"
fi
log "restarted $kind $namespace/$name"
