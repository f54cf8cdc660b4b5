#!/bin/sh
# evicted-pods-cleanup (1.0.0): delete the Pods of one namespace that the kubelet evicted (phase
# Failed, reason Evicted), only those of one workload when TARGET_RESOURCE_KIND/NAME are given, and
# only those evicted at least MIN_AGE_MINUTES ago. Each deletion is bound to the uid that was
# inspected: a new Pod that took the name meanwhile is never deleted.
#
# Parameters: TARGET_NAMESPACE, TARGET_RESOURCE_KIND (Deployment|StatefulSet|DaemonSet|Job; optional),
# TARGET_RESOURCE_NAME (with the kind), MIN_AGE_MINUTES (default 10).
# RBAC (role.yaml): list/delete pods; get the workload kind; list replicasets (Deployment).
. /workflow/lib.sh

param namespace TARGET_NAMESPACE
param kind TARGET_RESOURCE_KIND ""
param name TARGET_RESOURCE_NAME ""
param min_age MIN_AGE_MINUTES 10

check_label TARGET_NAMESPACE "$namespace"
check_int MIN_AGE_MINUTES "$min_age" 0 10080
if [ -n "$kind" ] || [ -n "$name" ]; then
	[ -n "$kind" ] && [ -n "$name" ] ||
		fail "TARGET_RESOURCE_KIND and TARGET_RESOURCE_NAME go together (got kind '$kind', name '$name')"
	check_enum TARGET_RESOURCE_KIND "$kind" Deployment StatefulSet DaemonSet Job
	check_name TARGET_RESOURCE_NAME "$name"
fi

# The uids a Pod's controller must have: the workload itself, or a Deployment's ReplicaSets.
owners=""
if [ -n "$kind" ]; then
	target="$(resource_of "$kind")/$name"
	must_exist "$namespace" "$target"
	uid=$(k get -n "$namespace" "$target" -o jsonpath='{.metadata.uid}')
	owners=$uid
	if [ "$kind" = Deployment ]; then
		owners=$(k get replicasets.apps -n "$namespace" -o jsonpath='{range .items[*]}{.metadata.uid}{" "}{.metadata.ownerReferences[?(@.controller==true)].uid}{"\n"}{end}' |
			awk -v owner="$uid" '$2 == owner {print $1}')
	fi
fi

now=$(date -u +%s)
pods=$(k get pods -n "$namespace" --field-selector=status.phase=Failed -o jsonpath='{range .items[*]}{.metadata.name}{"|"}{.metadata.uid}{"|"}{.status.reason}{"|"}{.metadata.creationTimestamp}{"|"}{.status.conditions[?(@.type=="DisruptionTarget")].lastTransitionTime}{"|"}{.metadata.ownerReferences[?(@.controller==true)].uid}{"\n"}{end}')

deleted=0 kept=0 failed=0
# Read from a here-document, not a pipe: the counters stay in this shell.
while IFS='|' read -r pod pod_uid reason created evicted owner; do
	[ -n "$pod" ] && [ "$reason" = Evicted ] || continue
	if [ -n "$kind" ]; then # a Pod without a controller belongs to no workload
		[ -n "$owner" ] && printf '%s\n' "$owners" | grep -qx -- "$owner" || continue
	fi
	since=$(date -u -D '%Y-%m-%dT%H:%M:%SZ' -d "${evicted:-$created}" +%s) ||
		fail "cannot read the time '${evicted:-$created}' of Pod $namespace/$pod"
	if [ $((now - since)) -lt $((min_age * 60)) ]; then
		kept=$((kept + 1))
		continue
	fi
	body="{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"preconditions\":{\"uid\":\"$pod_uid\"}}"
	if out=$(printf '%s' "$body" | k delete --raw "/api/v1/namespaces/$namespace/pods/$pod" -f - 2>&1); then
		log "deleted evicted Pod $namespace/$pod"
		deleted=$((deleted + 1))
	else
		case $out in
		*NotFound* | *"not found"* | *Precondition*) log "Pod $namespace/$pod is already gone or was replaced" ;;
		*) log "could not delete Pod $namespace/$pod: $out"; failed=$((failed + 1)) ;;
		esac
	fi
done <<PODS
$pods
PODS

log "deleted $deleted evicted Pods in $namespace${kind:+ of $kind $name}; kept $kept evicted less than $min_age minutes ago"
[ "$failed" -eq 0 ] || fail "$failed evicted Pods of $namespace could not be deleted"
