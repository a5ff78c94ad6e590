"""The only code that talks to the outside world: Kubernetes, the zone HTTP API, DNS UPDATE."""
