"""Step 4, observe: what the world holds before planning (the Kubernetes objects, each zone's SOA
serial and RRsets, how each instance is reached). Reads only; agent/clients/ makes the calls."""
