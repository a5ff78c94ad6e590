"""Step 4, plan: the whole revision's changes against what was observed, and how they render.
Pure."""
