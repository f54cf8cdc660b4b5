"""Development tooling for aianalysis-operator: never part of the operator image.

The local control plane (``devcluster``: etcd + kube-apiserver on loopback, for tests, the demo and
the benchmarks) and the demo live here, in their own distribution (``aianalysis-dev``, the
``devtools/`` folder of the repository), so that the runtime package ``aianalysis`` holds the
operator and nothing else. ``aianalysis`` never imports this package (an import-linter contract and
a test check it); ``aianalysis demo`` loads it by name when it is installed.
"""
