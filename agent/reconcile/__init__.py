"""Step 6, reconcile: the only writers to the world (Kubernetes, zone HTTP API, DNS UPDATE). They
execute an approved plan and decide nothing: no diff, no refusal (agent/gate/), no read before the
plan (agent/observe/); the wire clients are in agent/clients/."""
