"""Pure data shared by every step: the CR models, ObjectKey, problems, and the names the agent
uses."""
