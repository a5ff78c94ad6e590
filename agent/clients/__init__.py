"""The wire clients observe/ and reconcile/ both use: the Kubernetes API, the zone HTTP API, AXFR,
DNS UPDATE and queries, the state store, the run's deadline. They send what they are given and
decide nothing."""
