"""Step 5, gate: every refusal (safety and policy) decided on the whole plan before any write.
Pure."""
