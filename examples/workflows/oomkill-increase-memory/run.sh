#!/bin/sh
# oomkill-increase-memory (1.0.0, 1.1.0): raise the memory limit (and optionally the request) of one
# container of a Deployment or StatefulSet, then wait for the rollout.
#
# Parameters: TARGET_NAMESPACE, TARGET_RESOURCE_KIND (Deployment|StatefulSet), TARGET_RESOURCE_NAME,
# MEMORY_LIMIT_NEW (512Mi, 2Gi: must be above the current limit), MEMORY_REQUEST_NEW (1.1.0;
# <= MEMORY_LIMIT_NEW), CONTAINER_NAME (default: the only container, else the one that was
# OOMKilled), ROLLOUT_STRATEGY (rolling|recreate; recreate: a Deployment is rolled out by Recreate
# this once, its strategy restored afterwards). Waits up to 600 s for the rollout.
# RBAC (role.yaml): get/list/watch/patch the workload kind; list pods.
. /workflow/lib.sh

param namespace TARGET_NAMESPACE
param kind TARGET_RESOURCE_KIND
param name TARGET_RESOURCE_NAME
param limit MEMORY_LIMIT_NEW
param request MEMORY_REQUEST_NEW ""
param container CONTAINER_NAME ""
param strategy ROLLOUT_STRATEGY rolling
timeout=600 # the catalog's estimatedDuration is 5m; the executor's Job deadline is twice that

check_label TARGET_NAMESPACE "$namespace"
check_enum TARGET_RESOURCE_KIND "$kind" Deployment StatefulSet
check_name TARGET_RESOURCE_NAME "$name"
check_memory MEMORY_LIMIT_NEW "$limit"
[ -z "$request" ] || check_memory MEMORY_REQUEST_NEW "$request"
[ -z "$container" ] || check_label CONTAINER_NAME "$container"
check_enum ROLLOUT_STRATEGY "$strategy" rolling recreate
if [ -n "$request" ] && [ "$(bytes "$request")" -gt "$(bytes "$limit")" ]; then
	fail "MEMORY_REQUEST_NEW ($request) is above MEMORY_LIMIT_NEW ($limit)"
fi
if [ "$strategy" = recreate ] && [ "$kind" != Deployment ]; then
	fail "ROLLOUT_STRATEGY=recreate applies to a Deployment only; a $kind rolls its Pods one by one"
fi

target="$(resource_of "$kind")/$name"
must_exist "$namespace" "$target"

# Which container: the one named, else the only one, else the one whose Pods were OOMKilled.
containers=$(k get -n "$namespace" "$target" -o jsonpath='{range .spec.template.spec.containers[*]}{.name}{"\n"}{end}')
if [ -n "$container" ]; then
	printf '%s\n' "$containers" | grep -qx -- "$container" ||
		fail "$kind $namespace/$name has no container '$container' (it has: $(echo $containers))"
elif [ "$(printf '%s\n' "$containers" | grep -c .)" -eq 1 ]; then
	container=$containers
else
	selector=$(k get -n "$namespace" "$target" -o go-template='{{range $k, $v := .spec.selector.matchLabels}}{{$k}}={{$v}},{{end}}')
	[ -n "$selector" ] || fail "CONTAINER_NAME is required: $kind $namespace/$name has several containers"
	killed=$(k get pods -n "$namespace" -l "${selector%,}" -o jsonpath='{range .items[*].status.containerStatuses[*]}{.name}{" "}{.lastState.terminated.reason}{" "}{.state.terminated.reason}{"\n"}{end}' |
		awk '/OOMKilled/ {print $1}' | sort -u)
	if [ "$(printf '%s' "$killed" | grep -c .)" -ne 1 ]; then
		fail "CONTAINER_NAME is required: $kind $namespace/$name has containers $(echo $containers), OOMKilled: ${killed:-none}"
	fi
	container=$killed
fi

current=$(k get -n "$namespace" "$target" -o jsonpath="{.spec.template.spec.containers[?(@.name==\"$container\")].resources.limits.memory}")
if [ -n "$current" ]; then
	current_bytes=$(bytes "$current")
	[ -n "$current_bytes" ] || fail "cannot read the current memory limit '$current' of container $container"
	[ "$(bytes "$limit")" -gt "$current_bytes" ] ||
		fail "MEMORY_LIMIT_NEW ($limit) is not above the current limit ($current) of container $container"
fi

restore=""
if [ "$strategy" = recreate ]; then
	restore=$(k get -n "$namespace" "$target" -o jsonpath='{.spec.strategy}')
	out=$(k patch -n "$namespace" "$target" --type=merge -p '{"spec":{"strategy":{"type":"Recreate","rollingUpdate":null}}}' 2>&1) ||
		fail "could not switch $kind $namespace/$name to the Recreate strategy: $out"
fi

log "setting the memory limit of container $container of $kind $namespace/$name: ${current:-none} -> $limit"
set -- --limits="memory=$limit"
[ -z "$request" ] || set -- "$@" --requests="memory=$request"
if ! out=$(k set resources -n "$namespace" "$target" -c "$container" "$@" 2>&1); then
	fail "kubectl set resources $kind $namespace/$name: $out"
fi
log "$out"

status=0
wait_rollout "$namespace" "$target" "$timeout" || status=$?
if [ -n "$restore" ]; then
	out=$(k patch -n "$namespace" "$target" --type=merge -p "{\"spec\":{\"strategy\":$restore}}" 2>&1) ||
		fail "the new limit is set, but the strategy of $kind $namespace/$name could not be restored to $restore: $out"
fi
[ "$status" -eq 0 ] ||
	fail "set the memory limit of $kind $namespace/$name, but it is not rolled out after ${timeout}s: $_out"

now=$(k get -n "$namespace" "$target" -o jsonpath="{.spec.template.spec.containers[?(@.name==\"$container\")].resources.limits.memory}")
[ "$(bytes "$now")" = "$(bytes "$limit")" ] || fail "the memory limit of container $container reads $now, not $limit"
log "raised the memory limit of container $container of $kind $namespace/$name to $limit"
