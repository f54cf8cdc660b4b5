"""``python -m aianalysis_dev.devcluster [--crds DIR] [--node]``: a throwaway control plane (with
``--node``: and a real node, as root) until Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import time
from pathlib import Path

from aianalysis_dev import devcluster


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m aianalysis_dev.devcluster", description=__doc__)
    parser.add_argument("--crds", type=Path, help="apply the CRD manifests in this directory")
    parser.add_argument("--bin-dir", type=Path, help="where etcd, kube-apiserver and kubectl are")
    parser.add_argument("--node", action="store_true", help="add a real node (kubelet, containerd; root)")
    args = parser.parse_args(argv)
    kind = devcluster.NodeCluster if args.node else devcluster.DevCluster
    with kind(bin_dir=args.bin_dir) as cluster:
        if args.crds:
            devcluster.apply_crds(cluster, args.crds)
        print(f"export KUBECONFIG={cluster.kubeconfig}", flush=True)
        print(f"# {cluster.server}, kubectl: {cluster.bin_dir / 'kubectl'}; Ctrl-C stops it", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            # Not one long blocking wait: a SIGINT that lands just before it blocks only sets
            # Python's flag, and nothing would look at it again (seen under load).
            while True:
                time.sleep(1)


if __name__ == "__main__":
    main()
