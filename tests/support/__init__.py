"""Test harness: real components (etcd + kube-apiserver + kube-controller-manager, named, git)
started as processes on loopback by the tests themselves."""
