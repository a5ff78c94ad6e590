"""Step 6, reconcile: the only writers to the world (Kubernetes, zone HTTP API, DNS UPDATE), and their clients."""
