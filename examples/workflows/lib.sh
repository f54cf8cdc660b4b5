# shellcheck shell=sh
# What every workflow script of examples/workflows/ shares: clear failures, input checks, kubectl
# with a bounded request time. Sourced by /workflow/run.sh in the image (busybox sh, kubectl).
#
# The executor passes the workflow's parameters as environment variables named as in the catalog
# entry (TARGET_NAMESPACE, TARGET_RESOURCE_KIND, TARGET_RESOURCE_NAME, ...). Values are untrusted
# text: each script checks every one before it is used, and acts only on the named object in the
# named namespace.

set -eu

REQUEST_TIMEOUT=30s

# In a Pod, kubectl uses the in-cluster configuration only while nothing else is configured: a flag
# such as --request-timeout makes it fall back to localhost:8080 (seen on a real node). So the
# in-cluster values (the Service's address, the projected CA and token) are written as a kubeconfig.
_sa=/var/run/secrets/kubernetes.io/serviceaccount
if [ -z "${KUBECONFIG:-}" ] && [ -n "${KUBERNETES_SERVICE_HOST:-}" ] && [ -r "$_sa/token" ]; then
	_host=$KUBERNETES_SERVICE_HOST
	case $_host in *:*) _host="[$_host]" ;; esac
	KUBECONFIG=$(mktemp "${TMPDIR:-/tmp}/kubeconfig.XXXXXX")
	export KUBECONFIG
	cat >"$KUBECONFIG" <<EOF
apiVersion: v1
kind: Config
clusters:
  - name: in-cluster
    cluster: {server: "https://$_host:${KUBERNETES_SERVICE_PORT:-443}", certificate-authority: $_sa/ca.crt}
users:
  - name: workflow
    user: {tokenFile: $_sa/token}
contexts:
  - name: in-cluster
    context: {cluster: in-cluster, user: workflow}
current-context: in-cluster
EOF
fi

# Any other way out than success or fail() (a command that failed under `set -e`) still ends with a
# line that says the workflow failed.
trap '_status=$?; [ "$_status" -eq 0 ] || [ -n "${_failed:-}" ] ||
	printf "workflow failed: stopped by an unexpected error (exit %s), see above\n" "$_status" >&2' EXIT

log() {
	printf '%s\n' "$*"
}

# The reason goes to the log and, in a Pod, to the termination message the executor reads.
fail() {
	_failed=1
	printf 'workflow failed: %s\n' "$*" >&2
	if [ -w /dev/termination-log ]; then
		printf '%s\n' "$*" >/dev/termination-log
	fi
	exit 1
}

# param VARIABLE NAME [DEFAULT]: sets VARIABLE to the parameter NAME, or to DEFAULT when it is unset
# or empty; without a default, a missing parameter is a failure.
param() {
	eval "_value=\${$2:-}"
	if [ -z "$_value" ]; then
		[ $# -ge 3 ] || fail "parameter $2 is required"
		_value=$3
	fi
	eval "$1=\$_value"
}

# A namespace or container name (RFC 1123 label).
check_label() {
	case $2 in
	"" | *[!a-z0-9-]* | -* | *-) fail "$1 must be a DNS label (lowercase letters, digits, '-'), got '$2'" ;;
	esac
	[ ${#2} -le 63 ] || fail "$1 is longer than 63 characters"
}

# An object name (RFC 1123 subdomain).
check_name() {
	case $2 in
	"" | *[!a-z0-9.-]* | [!a-z0-9]* | *[!a-z0-9] | *..* | *.-* | *-.*)
		fail "$1 must be an object name (lowercase letters, digits, '-', '.'), got '$2'" ;;
	esac
	[ ${#2} -le 253 ] || fail "$1 is longer than 253 characters"
}

# check_enum NAME VALUE ALLOWED...
check_enum() {
	_name=$1 _got=$2
	shift 2
	for _allowed in "$@"; do
		[ "$_got" = "$_allowed" ] && return 0
	done
	fail "$_name must be one of: $*; got '$_got'"
}

# check_int NAME VALUE MIN MAX
check_int() {
	case $2 in
	"" | *[!0-9]*) fail "$1 must be a whole number, got '$2'" ;;
	esac
	[ ${#2} -le 9 ] || fail "$1 is out of range [$3, $4]: $2"
	[ "$2" -ge "$3" ] && [ "$2" -le "$4" ] || fail "$1 is out of range [$3, $4]: $2"
}

check_bool() {
	check_enum "$1" "$2" true false
}

# A memory quantity as the catalog allows it (<digits>Mi or <digits>Gi).
check_memory() {
	case $2 in
	[0-9]*Mi | [0-9]*Gi) _digits=${2%?i} ;;
	*) fail "$1 must look like 512Mi or 2Gi, got '$2'" ;;
	esac
	case $_digits in
	*[!0-9]*) fail "$1 must look like 512Mi or 2Gi, got '$2'" ;;
	esac
	[ ${#_digits} -le 9 ] || fail "$1 is too large: $2"
}

# bytes QUANTITY: a Kubernetes quantity (512Mi, 1.5Gi, 1G, 134217728, 2e9) in bytes; empty if it is
# not one. (busybox awk has no pow(): the units are spelled out.)
bytes() {
	printf '%s\n' "$1" | awk '
		BEGIN {
			unit[""] = 1; unit["k"] = 1e3; unit["M"] = 1e6; unit["G"] = 1e9; unit["T"] = 1e12
			unit["P"] = 1e15; unit["E"] = 1e18; unit["Ki"] = 1024; unit["Mi"] = 1048576
			unit["Gi"] = 1073741824; unit["Ti"] = 1099511627776; unit["Pi"] = 1125899906842624
			unit["Ei"] = 1152921504606846976
		}
		/^[0-9]+(\.[0-9]+)?([eE][0-9]+|[a-zA-Z]*)$/ {
			n = $0; sub(/[a-zA-Z]+$/, "", n); s = substr($0, length(n) + 1)
			if (s ~ /^[eE][0-9]+$/) { n = n s; s = "" }
			if (s in unit) printf "%.0f\n", n * unit[s]
		}'
}

# The resource argument of kubectl for a workload kind, fully qualified (no CRD can shadow it).
resource_of() {
	case $1 in
	Deployment) printf 'deployments.apps' ;;
	StatefulSet) printf 'statefulsets.apps' ;;
	DaemonSet) printf 'daemonsets.apps' ;;
	Job) printf 'jobs.batch' ;;
	*) fail "unsupported kind '$1'" ;;
	esac
}

# kubectl for one request (never a watch: `rollout status` has its own --timeout).
k() {
	kubectl --request-timeout="$REQUEST_TIMEOUT" "$@"
}

# wait_rollout NAMESPACE RESOURCE/NAME SECONDS
wait_rollout() {
	if ! _out=$(kubectl rollout status -n "$1" "$2" --timeout="${3}s" 2>&1); then
		return 1
	fi
	log "$_out"
}

# must_exist NAMESPACE RESOURCE/NAME: the target exists, else a clear failure (no action was taken).
must_exist() {
	if ! _out=$(k get -n "$1" "$2" -o name 2>&1); then
		fail "$2 in namespace $1: $_out"
	fi
}
