"""A BIND9 pod waiting for its zones, from the moment it starts to the moment it joins its Service.

A generated BIND9 pod carries the readiness gate `bindy.firestoned.io/zones-loaded`
(agent/desired/workloads.py): it is Ready, and in its Service, only once the agent has set that
condition True. Observe finds the pods that wait (model/podreadiness.py says which do,
observe/instancereach.py lists them) and a run writes them every zone like any pod; then:

    watch.py      a thread watching the pods: a new one that waits asks for a run at once
    gates.py      which waiting pods got every zone of their instance, and why the others did
                  not (pure)
    condition.py  asks each such pod for every zone's SOA, then sets its condition (the writer)
    step.py       the run's step after the DNS writes: gates, then conditions
"""
