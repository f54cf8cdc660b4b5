// Wrapper module: builds promtool (Prometheus v3.14.0, module version v0.314.0) from Go modules
// (hack/build-promtool.sh), like hack/helm/ for helm. Built with -tags remove_all_sd: promtool only
// checks rule files here, and the service-discovery plugins would pull in every cloud SDK. Where apt
// is missing, hack/build-prometheus.sh builds cmd/prometheus from this module too (go.sum has its sums).
module github.com/aianalysis-operator/hack/promtool

go 1.26.0

require github.com/prometheus/prometheus v0.314.0
